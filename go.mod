module github.com/senclaw/sandbox

go 1.26.8

require (
	github.com/elastic/go-seccomp-bpf v1.6.0
	go.etcd.io/bbolt v1.5.0
	golang.org/x/net v0.41.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/docker/docker v28.5.2+incompatible // indirect
	github.com/moby/profiles/seccomp v0.1.0 // indirect
	github.com/opencontainers/runtime-spec v1.2.1 // indirect
	github.com/shirou/gopsutil/v4 v4.26.10 // indirect
)
