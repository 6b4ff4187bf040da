//go:build !linux

package jailfs

import "io/fs"

// Children lists the directory name by its entries' names and kinds;
// past max entries it stops with ErrTooMany.
func (d *Dir) Children(name string, max int) ([]Child, error) {
	list, err := d.ReadDir(name)
	if err != nil {
		return nil, err
	}
	if len(list) > max {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: ErrTooMany}
	}
	out := make([]Child, 0, len(list))
	for _, e := range list {
		out = append(out, Child{Name: e.Name, Dir: e.Mode.IsDir(), Link: e.Mode&fs.ModeSymlink != 0})
	}
	return out, nil
}
