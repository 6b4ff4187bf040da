package app

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/senclaw/sandbox/backends"
)

// What a learn run used: its process tree is sampled every
// learnSampleEvery while it runs (each process's resident and data
// memory, its high-water mark, its threads), so that the proposal's
// memory and process limits have headroom over what the run really
// needed. A sample misses a process that starts and ends between two;
// each process's high-water mark (VmHWM) covers its own peak between
// samples.

// learnSampleEvery is the time between samples of a learn run.
const learnSampleEvery = 20 * time.Millisecond

// learnUsage is the peak of a learn run's samples.
type learnUsage struct {
	mu   sync.Mutex
	p    learnPeak
	stop chan struct{}
	done chan struct{}
}

// learnPeak is a learn run's usage, for the proposal.
type learnPeak struct {
	// TreeRSS is the most the tree held resident at once (the sum over
	// its processes in one sample); OneHWM the most one process held
	// (its high-water mark); OneData the most data (private writable
	// memory, what RLIMIT_DATA bounds) one process had.
	TreeRSS, OneHWM, OneData uint64
	// Tasks is the most processes and threads at once; Samples how many
	// samples were taken.
	Tasks, Samples int
}

// watchUsage samples proc's tree until end is called.
func watchUsage(proc backends.Process) *learnUsage {
	u := &learnUsage{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(u.done)
		t := time.NewTicker(learnSampleEvery)
		defer t.Stop()
		for {
			u.sample(proc.Pids())
			select {
			case <-u.stop:
				return
			case <-t.C:
			}
		}
	}()
	return u
}

// end stops the sampling; the peaks are final once it returns.
func (u *learnUsage) end() {
	if u == nil {
		return
	}
	select {
	case <-u.stop:
	default:
		close(u.stop)
	}
	<-u.done
}

// sample reads the status of each of pids.
func (u *learnUsage) sample(pids []int) {
	var rss uint64
	tasks := 0
	for _, pid := range pids {
		st, ok := readStatus(pid)
		if !ok {
			continue
		}
		rss += st.rss
		tasks += max(1, st.threads)
		u.mu.Lock()
		u.p.OneHWM = max(u.p.OneHWM, st.hwm)
		u.p.OneData = max(u.p.OneData, st.data)
		u.mu.Unlock()
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.p.Samples++
	u.p.TreeRSS = max(u.p.TreeRSS, rss)
	u.p.Tasks = max(u.p.Tasks, tasks)
}

// procStatus is what a sample reads of /proc/PID/status, in bytes.
type procStatus struct {
	rss, hwm, data uint64
	threads        int
}

func readStatus(pid int) (procStatus, bool) {
	var st procStatus
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return st, false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, val, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		f := bytes.Fields(val)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseUint(string(f[0]), 10, 64)
		if err != nil {
			continue
		}
		switch string(key) {
		case "VmRSS":
			st.rss = n << 10
		case "VmHWM":
			st.hwm = n << 10
		case "VmData":
			st.data = n << 10
		case "Threads":
			st.threads = int(n)
		}
	}
	return st, true
}

// peak is the usage as it stands.
func (u *learnUsage) peak() learnPeak {
	if u == nil {
		return learnPeak{}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.p
}
