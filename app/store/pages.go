package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// checkPages walks the file's B+tree the way bbolt would, from the meta
// page bbolt would pick, reading pages with pread rather than through a
// mapping, and says what is out of bounds: a page past the file or the
// high-water mark, an element whose key or value lies outside its page, a
// freelist longer than its page. bbolt's own check (tx.Check) runs in a
// goroutine of its own, where a fault on such a pointer cannot be turned
// into a panic and kills the process: it only runs once this passed.
//
// The layout is bbolt's file format (page header: id u64, flags u16,
// count u16, overflow u32; 16-byte branch and leaf elements; a bucket's
// value: root u64, sequence u64, and an inline page when root is 0), in
// the machine's byte order as bbolt writes it (little-endian on every
// platform senclaw ships for).
//
// minTxid, for a store an engine has open, is the transaction id of a
// read transaction held around the walk: pages reachable from a meta at
// least that new are not reused meanwhile, and an older meta (the newer
// one torn by a commit going on) is not walked.
func checkPages(path string, minTxid uint64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	w := &pageWalk{f: f, size: fi.Size(), seen: map[uint64]bool{}}
	m, err := w.meta()
	if err != nil {
		return err.Error()
	}
	if m.txid < minTxid {
		return ""
	}
	w.pageSize, w.highWater = uint64(m.pageSize), m.pgid
	if m.freelist != noFreelist {
		if err := w.freelist(m.freelist); err != nil {
			return err.Error()
		}
	}
	if err := w.node(m.root, 0); err != nil {
		return err.Error()
	}
	return ""
}

const (
	pageHeader  = 16
	elementSize = 16
	flagBranch  = 0x01
	flagLeaf    = 0x02
	flagFree    = 0x10
	bucketLeaf  = 0x01
	noFreelist  = ^uint64(0)
	boltMagic   = 0xED0CDAED
	boltVersion = 2
	maxDepth    = 64
)

var le = binary.LittleEndian

type pageWalk struct {
	f                   *os.File
	size                int64
	pageSize, highWater uint64
	seen                map[uint64]bool
}

type metaPage struct {
	pageSize             uint32
	root, freelist, pgid uint64
	txid                 uint64
}

// meta reads both meta pages and picks as bbolt does: the one with the
// higher transaction id if it is valid, else the other. The second is
// one page in: without a valid first one to give the page size, every
// size bbolt may use is tried.
func (w *pageWalk) meta() (metaPage, error) {
	m0, ok0 := w.readMeta(0)
	var m1 metaPage
	ok1 := false
	if ok0 {
		m1, ok1 = w.readMeta(int64(m0.pageSize))
		ok1 = ok1 && m1.pageSize == m0.pageSize
	} else {
		for ps := int64(1024); ps <= 16<<20 && ps < w.size && !ok1; ps *= 2 {
			m1, ok1 = w.readMeta(ps)
			ok1 = ok1 && int64(m1.pageSize) == ps
		}
	}
	switch {
	case ok1 && (!ok0 || m1.txid > m0.txid):
		return m1, nil
	case ok0:
		return m0, nil
	}
	return metaPage{}, errors.New("neither meta page is valid")
}

func (w *pageWalk) readMeta(off int64) (metaPage, bool) {
	buf := make([]byte, pageHeader+64)
	if _, err := w.f.ReadAt(buf, off); err != nil {
		return metaPage{}, false
	}
	m := buf[pageHeader:]
	h := fnv.New64a()
	h.Write(m[:56])
	ok := le.Uint32(m[0:]) == boltMagic && le.Uint32(m[4:]) == boltVersion && le.Uint64(m[56:]) == h.Sum64()
	mp := metaPage{pageSize: le.Uint32(m[8:]), root: le.Uint64(m[16:]), freelist: le.Uint64(m[32:]), pgid: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}
	ok = ok && mp.pageSize >= 512 && mp.pageSize <= 16<<20
	return mp, ok
}

// page reads page id with its overflow pages.
func (w *pageWalk) page(id uint64) ([]byte, error) {
	if id < 2 || id >= w.highWater {
		return nil, fmt.Errorf("page %d is outside the database (high-water mark %d)", id, w.highWater)
	}
	head := make([]byte, pageHeader)
	if _, err := w.f.ReadAt(head, int64(id*w.pageSize)); err != nil {
		return nil, fmt.Errorf("page %d: %v", id, err)
	}
	if got := le.Uint64(head); got != id {
		return nil, fmt.Errorf("page %d says it is page %d", id, got)
	}
	n := uint64(le.Uint32(head[12:])) + 1
	if id+n > w.highWater || (id+n)*w.pageSize > uint64(w.size) {
		return nil, fmt.Errorf("page %d with %d overflow pages runs past the database", id, n-1)
	}
	buf := make([]byte, n*w.pageSize)
	if _, err := w.f.ReadAt(buf, int64(id*w.pageSize)); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("page %d: %v", id, err)
	}
	return buf, nil
}

func (w *pageWalk) freelist(id uint64) error {
	buf, err := w.page(id)
	if err != nil {
		return fmt.Errorf("freelist: %w", err)
	}
	if le.Uint16(buf[8:])&flagFree == 0 {
		return fmt.Errorf("freelist page %d is not a freelist page (flags %#x)", id, le.Uint16(buf[8:]))
	}
	idx, count := uint64(0), uint64(le.Uint16(buf[10:]))
	if count == 0xFFFF {
		if len(buf) < pageHeader+8 {
			return fmt.Errorf("freelist page %d is too short", id)
		}
		idx, count = 1, le.Uint64(buf[pageHeader:])
	}
	if count > uint64(len(buf)) || pageHeader+(idx+count)*8 > uint64(len(buf)) {
		return fmt.Errorf("freelist page %d lists %d pages, more than it holds", id, count)
	}
	return nil
}

// node checks page id and what it leads to.
func (w *pageWalk) node(id uint64, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("page %d: the tree is deeper than %d", id, maxDepth)
	}
	if w.seen[id] {
		return fmt.Errorf("page %d is reached twice", id)
	}
	w.seen[id] = true
	buf, err := w.page(id)
	if err != nil {
		return err
	}
	return w.elements(id, buf, depth)
}

// elements checks the elements of a page held in buf (a whole page with
// its overflow, or an inline bucket's page) and follows them.
func (w *pageWalk) elements(id uint64, buf []byte, depth int) error {
	if len(buf) < pageHeader {
		return fmt.Errorf("page %d is shorter than its header", id)
	}
	flags, count := le.Uint16(buf[8:]), uint64(le.Uint16(buf[10:]))
	if flags != flagBranch && flags != flagLeaf {
		return fmt.Errorf("page %d is neither a branch nor a leaf (flags %#x)", id, flags)
	}
	size := uint64(len(buf))
	if pageHeader+count*elementSize > size {
		return fmt.Errorf("page %d has %d elements, more than it holds", id, count)
	}
	for i := uint64(0); i < count; i++ {
		off := pageHeader + i*elementSize
		e := buf[off : off+elementSize]
		if flags == flagBranch {
			pos, ksize := uint64(le.Uint32(e[0:])), uint64(le.Uint32(e[4:]))
			if off+pos+ksize > size {
				return fmt.Errorf("page %d: the key of element %d lies outside the page", id, i)
			}
			if err := w.node(le.Uint64(e[8:]), depth+1); err != nil {
				return err
			}
			continue
		}
		eflags, pos, ksize, vsize := le.Uint32(e[0:]), uint64(le.Uint32(e[4:])), uint64(le.Uint32(e[8:])), uint64(le.Uint32(e[12:]))
		if off+pos+ksize+vsize > size {
			return fmt.Errorf("page %d: the key or value of element %d lies outside the page", id, i)
		}
		if eflags&bucketLeaf == 0 {
			continue
		}
		v := buf[off+pos+ksize : off+pos+ksize+vsize]
		if len(v) < 16 {
			return fmt.Errorf("page %d: the bucket of element %d is too short", id, i)
		}
		if root := le.Uint64(v); root != 0 {
			if err := w.node(root, depth+1); err != nil {
				return err
			}
			continue
		}
		inline := v[16:]
		if len(inline) >= pageHeader && le.Uint16(inline[8:]) != flagLeaf {
			return fmt.Errorf("page %d: the inline bucket of element %d is not a leaf", id, i)
		}
		if err := w.elements(id, inline, depth+1); err != nil {
			return err
		}
	}
	return nil
}
