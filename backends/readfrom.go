package backends

import (
	"io"
	"sync"
)

// copyBufs are the buffers ReadFrom reads with.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// ReadFrom writes what r gives into w, with w.Write, until r ends, and
// is a run's output writer's ReadFrom method: os/exec copies a process's
// pipe into a writer with io.Copy, which takes ReadFrom, and without it
// makes a 32 KiB buffer for each stream of each process. ReadFrom reads
// with a buffer from a pool.
func ReadFrom(w io.Writer, r io.Reader) (int64, error) {
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	var total int64
	for {
		n, err := r.Read(*buf)
		if n > 0 {
			k, werr := w.Write((*buf)[:n])
			total += int64(k)
			if werr != nil {
				return total, werr
			}
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}
