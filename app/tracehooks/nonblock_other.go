//go:build !unix

package tracehooks

const nonBlock = 0

const dirOnly = 0
