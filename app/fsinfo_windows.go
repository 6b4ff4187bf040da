package app

import "io/fs"

func allocatedBytes(info fs.FileInfo) int64 { return info.Size() }

func ownerOf(fs.FileInfo) (uid, gid uint32, ok bool) { return 0, 0, false }
