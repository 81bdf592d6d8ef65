package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// otelServer is an engine's /otel socket: it records the request URI of
// every connection and every frame it reads.
type otelServer struct {
	*httptest.Server
	mu     sync.Mutex
	uris   []string
	frames []string
}

func newOtelServer(t *testing.T) *otelServer {
	t.Helper()
	s := &otelServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.uris = append(s.uris, r.URL.RequestURI())
		s.mu.Unlock()
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		ws.SetReadLimit(-1)
		for {
			_, data, err := ws.Read(context.Background())
			if err != nil {
				return
			}
			s.mu.Lock()
			s.frames = append(s.frames, string(data))
			s.mu.Unlock()
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *otelServer) got() (uris, frames []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.uris...), append([]string(nil), s.frames...)
}

func (s *otelServer) wsURL() string { return "ws" + strings.TrimPrefix(s.URL, "http") }

// The /otel socket is the engine URL with /otel appended to its path: a
// query string (a token) stays the query string.
func TestOtelURLAppendsToThePath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ws://127.0.0.1:49134", "ws://127.0.0.1:49134/otel"},
		{"ws://127.0.0.1:49134/", "ws://127.0.0.1:49134/otel"},
		{"ws://h:1/?token=abc", "ws://h:1/otel?token=abc"},
		{"wss://h/iii/?token=a%2Fb&x=1", "wss://h/iii/otel?token=a%2Fb&x=1"},
		{"ws://h/base", "ws://h/base/otel"},
	} {
		got, err := OtelURL(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("OtelURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// A worker started with a token in the engine URL's query dials /otel
// with the same token, not "/?token=abc/otel".
func TestTelemetryDialsOtelWithTheQueryKept(t *testing.T) {
	srv := newOtelServer(t)
	tel, err := Start(context.Background(), Options{EngineURL: srv.wsURL() + "/?token=abc", Enabled: true, Service: "t", Version: "0", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	_, span := tel.StartServer(context.Background(), "x::y")
	span.End("ok")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	uris, frames := srv.got()
	if len(uris) == 0 || uris[0] != "/otel?token=abc" || len(frames) == 0 {
		t.Fatalf("uris %q, %d frames", uris, len(frames))
	}
}

// Close sends every frame still queued before it returns — the last spans,
// metrics and the "stopping" record of a clean stop — bounded by its
// context.
func TestSinkCloseFlushesTheQueue(t *testing.T) {
	srv := newOtelServer(t)
	s := NewSink(srv.wsURL()+"/otel", 256, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for i := range 100 {
		s.Send([]byte(fmt.Sprintf("LOGS%d", i)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.Close(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, frames := srv.got()
		if len(frames) == 100 {
			for i, f := range frames {
				if f != fmt.Sprintf("LOGS%d", i) {
					t.Fatalf("frame %d is %q", i, f)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the engine got %d of 100 frames (dropped %d)", len(frames), s.Dropped())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s.Dropped() != 0 {
		t.Fatalf("dropped %d", s.Dropped())
	}
}

// With no engine to send to, Close gives up when its context ends and
// counts what it could not send.
func TestSinkCloseIsBoundedWithoutAnEngine(t *testing.T) {
	s := NewSink("ws://127.0.0.1:1/otel", 16, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for range 5 {
		s.Send([]byte("OTLP{}"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	s.Close(ctx)
	if s.Dropped() != 5 {
		t.Fatalf("dropped %d, want 5", s.Dropped())
	}
}

// An unreachable socket is said once at warn, and so is its recovery.
func TestSinkWarnsOnceWhenTheSocketIsDownAndWhenItRecovers(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		lines = append(lines, string(p))
		mu.Unlock()
		return len(p), nil
	}), &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := newOtelServer(t)
	// A listener that refuses until the real server is swapped in.
	var ready bool
	var rmu sync.Mutex
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rmu.Lock()
		ok := ready
		rmu.Unlock()
		if !ok {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		srv.Config.Handler.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	s := NewSink("ws"+strings.TrimPrefix(proxy.URL, "http")+"/otel", 16, log)
	time.Sleep(1500 * time.Millisecond) // several failed dials
	rmu.Lock()
	ready = true
	rmu.Unlock()
	s.Send([]byte("OTLP{}"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, frames := srv.got(); len(frames) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the frame never arrived")
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s.Close(ctx)
	mu.Lock()
	defer mu.Unlock()
	var down, back int
	for _, l := range lines {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, "not reachable") {
			down++
		}
		if strings.Contains(l, "level=WARN") && strings.Contains(l, "answers again") {
			back++
		}
	}
	if down != 1 || back != 1 {
		t.Fatalf("down %d, back %d:\n%s", down, back, strings.Join(lines, ""))
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// What the sink logs of its URL never carries the query (a token).
func TestSinkLogsTheURLWithoutItsQuery(t *testing.T) {
	if got := withoutQuery("ws://u:p@h:1/otel?token=secret"); strings.Contains(got, "secret") || strings.Contains(got, "p@") || !strings.HasPrefix(got, "ws://h:1/otel") {
		t.Fatalf("%q", got)
	}
}
