package diskquota

import "io/fs"

// allocatedBytes is the disk space a file takes (its size, here).
func allocatedBytes(info fs.FileInfo) int64 { return info.Size() }
