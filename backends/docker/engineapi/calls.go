package engineapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// Ping asks the daemon whether it answers, and settles the API version
// when it is negotiated.
func (c *Client) Ping(ctx context.Context) (Ping, error) {
	req, err := c.request(ctx, http.MethodGet, "/_ping", nil, nil, false)
	if err != nil {
		return Ping{}, err
	}
	resp, err := c.send(req)
	if err != nil {
		return Ping{}, err
	}
	drain(resp)
	p := Ping{APIVersion: resp.Header.Get("API-Version"), OSType: resp.Header.Get("OSType")}
	c.settle(p.APIVersion)
	return p, nil
}

// ServerVersion is the daemon's version.
func (c *Client) ServerVersion(ctx context.Context) (Version, error) {
	var v Version
	resp, err := c.do(ctx, http.MethodGet, "/version", nil, nil)
	if err != nil {
		return v, err
	}
	return v, readJSON(resp, maxSmallBody, "version", &v)
}

// ContainerCreate makes a container named name ("" lets the daemon name
// it) and returns its id.
func (c *Client) ContainerCreate(ctx context.Context, cfg *ContainerConfig, host *HostConfig, name string) (string, error) {
	q := url.Values{}
	if name != "" {
		q.Set("name", name)
	}
	return c.create(ctx, "/containers/create", q, createRequest{ContainerConfig: cfg, HostConfig: host}, "a container")
}

// create POSTs a create request and returns the id of what the daemon
// made (what: "a container").
func (c *Client) create(ctx context.Context, path string, q url.Values, in any, what string) (string, error) {
	resp, err := c.do(ctx, http.MethodPost, path, q, in)
	if err != nil {
		return "", err
	}
	var out struct {
		ID string `json:"Id"`
	}
	if err := readJSON(resp, maxSmallBody, "answer to the creation of "+what, &out); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", fmt.Errorf("the daemon made %s but gave no id", what)
	}
	return out.ID, nil
}

// ContainerStart starts a container (one already running is fine).
func (c *Client) ContainerStart(ctx context.Context, id string) error {
	return c.post(ctx, "/containers/"+id+"/start", nil)
}

// ContainerStop stops a container: its stop signal, then SIGKILL after
// timeout seconds.
func (c *Client) ContainerStop(ctx context.Context, id string, timeout int) error {
	return c.post(ctx, "/containers/"+id+"/stop", url.Values{"t": {strconv.Itoa(timeout)}})
}

// ContainerRestart stops a container as ContainerStop does and starts it
// again.
func (c *Client) ContainerRestart(ctx context.Context, id string, timeout int) error {
	return c.post(ctx, "/containers/"+id+"/restart", url.Values{"t": {strconv.Itoa(timeout)}})
}

// ContainerRemove removes a container, killing it first when force is
// set, with its anonymous volumes.
func (c *Client) ContainerRemove(ctx context.Context, id string, force bool) error {
	q := url.Values{"v": {"1"}}
	if force {
		q.Set("force", "1")
	}
	resp, err := c.do(ctx, http.MethodDelete, "/containers/"+id, q, nil)
	if err != nil {
		return err
	}
	drain(resp)
	return nil
}

// post sends a POST without a body whose answer is only its status.
func (c *Client) post(ctx context.Context, path string, q url.Values) error {
	resp, err := c.do(ctx, http.MethodPost, path, q, nil)
	if err != nil {
		return err
	}
	drain(resp)
	return nil
}

// ContainerInspect tells a container's state and labels.
func (c *Client) ContainerInspect(ctx context.Context, id string) (Container, error) {
	var ins Container
	resp, err := c.do(ctx, http.MethodGet, "/containers/"+id+"/json", nil, nil)
	if err != nil {
		return ins, err
	}
	return ins, readJSON(resp, maxInspectBody, "container inspect", &ins)
}

// ContainerList lists the containers (stopped ones too when all is set)
// that carry every label given ("key=value" or "key").
func (c *Client) ContainerList(ctx context.Context, all bool, labels ...string) ([]ContainerSummary, error) {
	q := url.Values{}
	if all {
		q.Set("all", "1")
	}
	if len(labels) > 0 {
		f := map[string]map[string]bool{"label": {}}
		for _, l := range labels {
			f["label"][l] = true
		}
		data, err := json.Marshal(f)
		if err != nil {
			return nil, err
		}
		q.Set("filters", string(data))
	}
	resp, err := c.do(ctx, http.MethodGet, "/containers/json", q, nil)
	if err != nil {
		return nil, err
	}
	var list []ContainerSummary
	return list, readJSON(resp, maxListBody, "container list", &list)
}

// ContainerTop lists a container's processes.
func (c *Client) ContainerTop(ctx context.Context, id string) (Top, error) {
	var top Top
	resp, err := c.do(ctx, http.MethodGet, "/containers/"+id+"/top", nil, nil)
	if err != nil {
		return top, err
	}
	return top, readJSON(resp, maxListBody, "process list", &top)
}

// ContainerStats reads one sample of a container's resource use; it has
// the previous CPU reading too, a second before.
func (c *Client) ContainerStats(ctx context.Context, id string) (Stats, error) {
	var s Stats
	resp, err := c.do(ctx, http.MethodGet, "/containers/"+id+"/stats", url.Values{"stream": {"0"}}, nil)
	if err != nil {
		return s, err
	}
	return s, readJSON(resp, maxSmallBody, "stats", &s)
}

// Conditions a ContainerWait waits for.
const (
	WaitNotRunning = "not-running"
	WaitRemoved    = "removed"
)

// ContainerWait starts waiting until a container meets condition
// (WaitNotRunning, WaitRemoved): it returns once the daemon watches the
// container (so a container started after it cannot be missed), and the
// function it returns waits for the condition and gives the exit code.
func (c *Client) ContainerWait(ctx context.Context, id, condition string) (func() (int64, error), error) {
	resp, err := c.do(ctx, http.MethodPost, "/containers/"+id+"/wait", url.Values{"condition": {condition}}, nil)
	if err != nil {
		return nil, err
	}
	return func() (int64, error) { return waitResult(resp) }, nil
}

// waitResult reads the answer of a container wait.
func waitResult(resp *http.Response) (int64, error) {
	var out struct {
		StatusCode int64 `json:"StatusCode"`
		Error      *struct {
			Message string `json:"Message"`
		} `json:"Error"`
	}
	if err := readJSON(resp, maxSmallBody, "answer to a container wait", &out); err != nil {
		return 0, err
	}
	if out.Error != nil && out.Error.Message != "" {
		return 0, fmt.Errorf("waiting for the container: %s", cleanMessage(out.Error.Message))
	}
	return out.StatusCode, nil
}

// ContainerAttach attaches to a container's output (and input with
// stdin) before it starts; the stream is multiplexed (Demux) unless the
// container has a terminal.
func (c *Client) ContainerAttach(ctx context.Context, id string, stdin, stdout, stderr bool) (*Hijacked, error) {
	q := url.Values{"stream": {"1"}}
	for k, v := range map[string]bool{"stdin": stdin, "stdout": stdout, "stderr": stderr} {
		if v {
			q.Set(k, "1")
		}
	}
	return c.hijack(ctx, "/containers/"+id+"/attach", q, nil)
}

// ExecCreate makes an exec in a running container and returns its id.
func (c *Client) ExecCreate(ctx context.Context, containerID string, cfg ExecConfig) (string, error) {
	if err := c.negotiate(ctx); err != nil {
		return "", err
	}
	if VersionLess(c.ClientVersion(), "1.42") {
		cfg.ConsoleSize = nil
	}
	return c.create(ctx, "/containers/"+containerID+"/exec", nil, cfg, "an exec")
}

// ExecStart starts an exec attached to its streams: multiplexed (Demux)
// unless it has a terminal.
func (c *Client) ExecStart(ctx context.Context, execID string, opts ExecStartOptions) (*Hijacked, error) {
	if err := c.negotiate(ctx); err != nil {
		return nil, err
	}
	if VersionLess(c.ClientVersion(), "1.42") {
		opts.ConsoleSize = nil
	}
	body := struct {
		Detach bool `json:"Detach"`
		ExecStartOptions
	}{ExecStartOptions: opts}
	return c.hijack(ctx, "/exec/"+execID+"/start", nil, body)
}

// ExecInspect tells whether an exec runs, its pid and exit code.
func (c *Client) ExecInspect(ctx context.Context, execID string) (ExecInspect, error) {
	var e ExecInspect
	resp, err := c.do(ctx, http.MethodGet, "/exec/"+execID+"/json", nil, nil)
	if err != nil {
		return e, err
	}
	return e, readJSON(resp, maxSmallBody, "exec inspect", &e)
}

// ExecResize sets the size of an exec's terminal.
func (c *Client) ExecResize(ctx context.Context, execID string, height, width uint) error {
	return c.post(ctx, "/exec/"+execID+"/resize", url.Values{"h": {strconv.FormatUint(uint64(height), 10)}, "w": {strconv.FormatUint(uint64(width), 10)}})
}

// ImageInspect tells an image's id.
func (c *Client) ImageInspect(ctx context.Context, ref string) (Image, error) {
	var img Image
	resp, err := c.do(ctx, http.MethodGet, "/images/"+ref+"/json", nil, nil)
	if err != nil {
		return img, err
	}
	return img, readJSON(resp, maxInspectBody, "image inspect", &img)
}

// ImageImport makes the image ref from a root filesystem tarball, with
// Dockerfile changes ("ENV PATH=/bin"), and waits until it is done.
func (c *Client) ImageImport(ctx context.Context, tarball io.Reader, ref string, changes ...string) error {
	q := url.Values{"fromSrc": {"-"}, "repo": {ref}}
	for _, ch := range changes {
		q.Add("changes", ch)
	}
	resp, err := c.do(ctx, http.MethodPost, "/images/create", q, tarball)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// The answer is a stream of JSON progress messages; a failure is one
	// with an error.
	sc := bufio.NewScanner(io.LimitReader(resp.Body, maxListBody))
	sc.Buffer(make([]byte, 0, 4096), maxSmallBody)
	for sc.Scan() {
		var m struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Error != "" {
			return fmt.Errorf("importing image %s: %s", ref, cleanMessage(m.Error))
		}
	}
	return sc.Err()
}

// ImageRemove removes an image (its tag, and the image when no other tag
// is left), forcibly when force is set.
func (c *Client) ImageRemove(ctx context.Context, ref string, force bool) error {
	q := url.Values{}
	if force {
		q.Set("force", "1")
	}
	resp, err := c.do(ctx, http.MethodDelete, "/images/"+ref, q, nil)
	if err != nil {
		return err
	}
	drain(resp)
	return nil
}
