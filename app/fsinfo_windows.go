package app

import "io/fs"

func ownerOf(fs.FileInfo) (uid, gid uint32, ok bool) { return 0, 0, false }
