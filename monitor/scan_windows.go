//go:build windows

package monitor

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// scanState is empty on Windows: a scan needs nothing kept between calls.
type scanState struct{}

// scan lists pids and parents from one toolhelp snapshot. gopsutil's Ppid
// takes a whole snapshot per process, which would make a scan quadratic.
//
// Windows keeps a dead parent's pid in its children's entries and may hand
// that pid to an unrelated process; a tree built from these parents can then
// include strangers. Sandboxes on Windows should be contained by job objects
// as well; this monitor only reports.
func (h *HostLister) scan(ctx context.Context) ([]ProcRef, error) {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil, fmt.Errorf("snapshotting processes: %w", err)
	}
	defer windows.CloseHandle(snap)

	var entry windows.ProcessEntry32
	entry.Size = uint32(unsafe.Sizeof(entry))
	if err := windows.Process32First(snap, &entry); err != nil {
		return nil, fmt.Errorf("reading process snapshot: %w", err)
	}
	var refs []ProcRef
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		refs = append(refs, ProcRef{Pid: int(entry.ProcessID), PPid: int(entry.ParentProcessID)})
		err := windows.Process32Next(snap, &entry)
		if errors.Is(err, windows.ERROR_NO_MORE_FILES) {
			return refs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading process snapshot: %w", err)
		}
	}
}
