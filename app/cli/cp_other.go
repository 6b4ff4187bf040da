//go:build !unix

package cli

// noFollow: os.Root keeps names inside the folder; there is no flag for
// the last component here.
const noFollow = 0
