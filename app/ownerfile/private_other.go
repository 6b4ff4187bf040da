//go:build !unix

package ownerfile

import (
	"errors"
	"os"
)

// noFollow: the profile directory's ACL keeps the key private here.
const noFollow = 0

// checkPrivate refuses what is not a regular file.
func checkPrivate(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errors.New("is not a regular file")
	}
	return nil
}
