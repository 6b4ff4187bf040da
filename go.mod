module github.com/senclaw/sandbox

go 1.26.8

require (
	github.com/elastic/go-seccomp-bpf v1.6.0
	go.etcd.io/bbolt v1.5.0
	golang.org/x/net v0.41.0
	golang.org/x/sys v0.50.0
)
