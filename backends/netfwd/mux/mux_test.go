package mux

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"sync"
	"testing"
	"time"
)

// pair connects two sessions over pipes, as the exec's stdin and stdout
// connect the engine's and the container's.
func pair(t *testing.T) (engine, container *Session) {
	t.Helper()
	ar, aw := io.Pipe() // engine -> container
	br, bw := io.Pipe() // container -> engine
	engine = New(br, aw, true)
	container = New(ar, bw, false)
	// As the owners of the exec stream do: a session that ends closes
	// the pipe, so that no writer waits on it for ever.
	for _, s := range []*Session{engine, container} {
		go func() {
			<-s.Done()
			aw.Close()
			bw.Close()
		}()
	}
	t.Cleanup(func() {
		engine.Close()
		container.Close()
		aw.Close()
		bw.Close()
	})
	return engine, container
}

func TestStreamsBothWays(t *testing.T) {
	t.Parallel()
	eng, ctr := pair(t)
	if err := ctr.Hello("ready"); err != nil {
		t.Fatal(err)
	}
	if w, err := eng.WaitHello(time.Second); err != nil || w != "ready" {
		t.Fatalf("hello: %q %v", w, err)
	}
	// An echo on each side: each accepted stream sends back what it gets.
	echo := func(s *Session) {
		for {
			st, err := s.Accept()
			if err != nil {
				return
			}
			go func() {
				_, _ = io.Copy(st, st)
				_ = st.CloseWrite()
			}()
		}
	}
	go echo(eng)
	go echo(ctr)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from := eng
			if i%2 == 1 {
				from = ctr
			}
			st, err := from.Open("echo")
			if err != nil {
				t.Error(err)
				return
			}
			defer st.Close()
			data := make([]byte, 3*Window+12345)
			_, _ = rand.Read(data)
			go func() {
				_, _ = st.Write(data)
				_ = st.CloseWrite()
			}()
			got, err := io.ReadAll(st)
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("stream %d: got %d bytes (%v), want %d", i, len(got), err, len(data))
			}
		}()
	}
	wg.Wait()
}

// A stream nobody reads holds up only itself: the others go on.
func TestSlowReaderHoldsOnlyItsStream(t *testing.T) {
	t.Parallel()
	eng, ctr := pair(t)
	got := make(chan *Stream, 2)
	go func() {
		for {
			st, err := ctr.Accept()
			if err != nil {
				return
			}
			got <- st
		}
	}()
	stuck, _ := eng.Open("stuck")
	<-got
	done := make(chan error, 1)
	go func() {
		_, err := stuck.Write(make([]byte, 4*Window))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("a write of four windows to a stream nobody reads returned: %v", err)
	default:
	}
	other, _ := eng.Open("other")
	peer := <-got
	go func() { _, _ = other.Write([]byte("hello")); _ = other.CloseWrite() }()
	b, err := io.ReadAll(peer)
	if err != nil || string(b) != "hello" {
		t.Fatalf("the other stream: %q %v", b, err)
	}
	_ = stuck.SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
	if err := <-done; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the stuck write: %v, want a deadline error", err)
	}
}

func TestReadDeadlineAndClose(t *testing.T) {
	t.Parallel()
	eng, ctr := pair(t)
	st, _ := eng.Open("x")
	peer, err := ctr.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if peer.Meta() != "x" {
		t.Fatalf("meta %q", peer.Meta())
	}
	_ = st.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := st.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v", err)
	}
	// What was written before a close still arrives.
	_, _ = peer.Write([]byte("bye"))
	peer.Close()
	_ = st.SetReadDeadline(time.Time{})
	b, err := io.ReadAll(st)
	if string(b) != "bye" || err != nil {
		t.Fatalf("after the peer's close: %q %v", b, err)
	}
	if _, err := st.Write([]byte("more")); err == nil {
		t.Fatal("a write to a stream the peer closed succeeded")
	}
}

func TestSessionEndEndsStreams(t *testing.T) {
	t.Parallel()
	eng, ctr := pair(t)
	st, _ := eng.Open("x")
	if _, err := ctr.Accept(); err != nil {
		t.Fatal(err)
	}
	ctr.Close()
	eng.Close()
	if _, err := st.Read(make([]byte, 1)); err == nil {
		t.Fatal("a read after the session ended succeeded")
	}
	if _, err := eng.Open("y"); err == nil {
		t.Fatal("an open after the session ended succeeded")
	}
}

// A peer that sends past a stream's window, or a frame of no kind,
// ends the session: it is not trusted.
func TestProtocolBreaksEndTheSession(t *testing.T) {
	t.Parallel()
	frame := func(kind byte, id uint32, payload []byte) []byte {
		b := make([]byte, headSize+len(payload))
		b[0] = kind
		binary.BigEndian.PutUint32(b[1:5], id)
		binary.BigEndian.PutUint32(b[5:9], uint32(len(payload)))
		copy(b[headSize:], payload)
		return b
	}
	var flood []byte
	flood = append(flood, frame(kindOpen, 1, []byte("x"))...)
	for i := 0; i <= Window/MaxData; i++ {
		flood = append(flood, frame(kindData, 1, make([]byte, MaxData))...)
	}
	for name, in := range map[string][]byte{
		"past_window":   flood,
		"unknown_kind":  frame(99, 1, nil),
		"huge_frame":    frame(kindData, 1, nil)[:5],
		"never_opened":  frame(kindData, 7, []byte("x")),
		"own_parity_id": frame(kindOpen, 2, []byte("x")),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if name == "huge_frame" {
				in = append(in, 0xff, 0xff, 0xff, 0xff)
			}
			s := New(bytes.NewReader(in), io.Discard, true)
			go func() {
				for {
					if _, err := s.Accept(); err != nil {
						return
					}
				}
			}()
			select {
			case <-s.Done():
			case <-time.After(2 * time.Second):
				t.Fatal("the session went on")
			}
			if err := s.Err(); err == nil || errors.Is(err, ErrSessionClosed) {
				t.Fatalf("ended with %v, want a protocol error", err)
			}
		})
	}
}
