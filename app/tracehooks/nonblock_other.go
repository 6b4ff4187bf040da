//go:build !unix

package tracehooks

const nonBlock = 0
