package sandboxuid

import (
	"fmt"
	"sync"
)

// Pool hands out the uids of a range: one per sandbox, never one held,
// one the system's files name or one a host process ran as when the pool
// was made. Its first uid is the engine's own (Reserved): no sandbox gets
// it. Uids go round the range, so one let go is handed out again only
// after every other free one has been.
type Pool struct {
	mu   sync.Mutex
	r    Range
	held map[uint32]string      // uid -> the sandbox holding it
	used func(id uint32) string // what else uses id, "" for nothing
	next uint32
	// budget is how many more uids the pool may look at before it records
	// a mark further on (save): an engine that starts again begins at the
	// last mark, past every uid its last run handed out.
	budget int
	save   func(mark uint32) error
	// A uid let go is handed out again only once a listing of the
	// processes (list) made after it was let go shows none runs as it: a
	// process its sandbox left behind keeps it from the next sandbox.
	// released is when (in lets-go) each was let go; listed is how many
	// lets-go the last listing, procs, came after, and listedIn the Take
	// it was made in (a uid it shows busy is looked at again in the next).
	list     func() (map[uint32]int, error)
	released map[uint32]uint64
	lets     uint64
	listed   uint64
	procs    map[uint32]int
	takes    uint64
	listedIn uint64
}

// markStep is how many uids are handed out between two records of the
// mark: one store commit per markStep sandboxes.
const markStep = 1024

// NewPool makes the pool of r. used says what else uses an id ("" for
// nothing; nil: nothing does); start is the mark an earlier run recorded
// (0: none); save records a new mark (nil: nothing is recorded).
func NewPool(r Range, used func(id uint32) string, start uint32, save func(mark uint32) error) *Pool {
	p := &Pool{r: r, held: map[uint32]string{}, used: used, save: save}
	if p.used == nil {
		p.used = func(uint32) string { return "" }
	}
	p.next = r.First + 1
	if r.Contains(start) && start != r.First {
		p.next = start
	}
	return p
}

// ListProcesses makes p look at the processes (list: the uids they run
// as, as ProcessIDs gives them) before it hands out a uid let go again.
func (p *Pool) ListProcesses(list func() (map[uint32]int, error)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = list
}

// Range is the pool's range.
func (p *Pool) Range() Range { return p.r }

// Reserved is the engine's own uid, the range's first: the probes' trial
// sandboxes and other work that must run as no sandbox's user.
func (p *Pool) Reserved() uint32 { return p.r.First }

// Take hands out a free uid to the sandbox owner.
func (p *Pool) Take(owner string) (uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.takes++
	for range p.r.Size() {
		if p.budget == 0 && p.save != nil {
			if err := p.save(p.step(p.next, markStep)); err != nil {
				return 0, fmt.Errorf("recording the sandbox uids handed out: %w", err)
			}
			p.budget = markStep
		}
		p.budget--
		id := p.next
		p.next = p.step(id, 1)
		if _, held := p.held[id]; !held && p.used(id) == "" && p.quiet(id) {
			p.held[id] = owner
			return id, nil
		}
	}
	return 0, fmt.Errorf("every uid of the sandbox range %s is in use (%d sandboxes hold one): remove sandboxes, or give sandboxUidRange a larger range", p.r, len(p.held))
}

// quiet reports whether no process runs as id, a uid let go, since it
// was let go; one never let go is quiet (NewPool's used knows what ran at
// the start). A listing that fails counts as a process on every such uid.
func (p *Pool) quiet(id uint32) bool {
	at, ok := p.released[id]
	if !ok || p.list == nil {
		return true
	}
	_, busy := p.procs[id]
	if at > p.listed || (busy && p.listedIn != p.takes) {
		procs, err := p.list()
		if err != nil {
			return false
		}
		p.procs, p.listed, p.listedIn = procs, p.lets, p.takes
	}
	if _, runs := p.procs[id]; runs {
		return false
	}
	delete(p.released, id)
	return true
}

// step is the uid n places after id, going round the range past the
// engine's own.
func (p *Pool) step(id uint32, n int) uint32 {
	first, size := uint64(p.r.First)+1, uint64(p.r.Size()-1)
	return uint32(first + (uint64(id)-first+uint64(n))%size)
}

// Hold gives a stored sandbox its uid again (at the engine's start):
// false, with the reason, when the uid is not the sandbox's to have (out
// of the range, the engine's own, another's, or used by something else).
func (p *Pool) Hold(id uint32, owner string) (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch other, held := p.held[id]; {
	case !p.r.Contains(id):
		return false, fmt.Sprintf("uid %d lies outside the sandbox range %s", id, p.r)
	case id == p.r.First:
		return false, fmt.Sprintf("uid %d is the engine's own", id)
	case held && other != owner:
		return false, fmt.Sprintf("uid %d is sandbox %s's", id, other)
	}
	if why := p.used(id); why != "" {
		return false, fmt.Sprintf("uid %d is used by %s", id, why)
	}
	p.held[id] = owner
	return true, ""
}

// Release lets owner's uid go; a uid another sandbox holds now is kept.
func (p *Pool) Release(id uint32, owner string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held[id] == owner {
		delete(p.held, id)
		if p.released == nil {
			p.released = map[uint32]uint64{}
		}
		p.lets++
		p.released[id] = p.lets
	}
}

// Holder is the sandbox holding id, "" when none does.
func (p *Pool) Holder(id uint32) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held[id]
}
