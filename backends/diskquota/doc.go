// Package diskquota keeps a sandbox's workspace within its disk quota.
//
// The hard kind, where the engine can make one (as root, with loop
// devices, ext4 and mkfs.ext4): Images gives each workspace a sparse
// ext4 file of the quota's size on a loop device, mounted over the
// workspace (nosuid, nodev). Writes past the quota fail with ENOSPC, and
// so does the file after the last of its inodes (one per 16 KiB); open
// unlinked files keep their blocks counted; no burst between two looks
// can overshoot, because nothing looks: the kernel refuses.
//
// Elsewhere, the watchdog (Watchdog): it counts the workspace's bytes
// (allocated blocks) and files as they change, from inotify events, and
// the files the sandbox's processes hold open after unlinking them (from
// /proc/PID/fd), and says when the quota is passed; the engine then kills
// the run. Its cost follows what changes, not the size of the workspace:
// a poll re-reads only the files written since the last one.
package diskquota

import "errors"

// BytesPerInode is how much quota one file costs: an image of N MiB has
// N MiB / 16 KiB inodes (ext4's default ratio), and the watchdog allows as
// many files.
const BytesPerInode = 16 << 10

// Inodes is how many files a quota of sizeMB allows.
func Inodes(sizeMB int) int64 { return max(int64(sizeMB)<<20/BytesPerInode, 64) }

// ErrTooBig refuses to put a workspace into an image it does not fit.
var ErrTooBig = errors.New("the workspace holds more than fits its disk quota")
