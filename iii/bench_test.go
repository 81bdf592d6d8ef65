package iii_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/code-runner-go/code-runner/iii"
)

// BenchmarkBusRoundTrip measures a trivial Go function called by another Go
// client through the test engine (two WebSocket hops each way, plus
// routing), beside a baseline measured in the same run: one raw WebSocket
// echo round trip on loopback. It reports p50/p99 of both and their ratio.
func BenchmarkBusRoundTrip(b *testing.B) {
	e := newEngineB(b)
	server := iii.New(iii.Options{URL: e.URL(), Name: "srv", Logger: quiet()})
	defer server.Close()
	server.RegisterFunction(iii.FunctionDef{ID: "srv::echo"}, func(ctx context.Context, r iii.Request) (any, error) { return r.Data, nil })
	caller := iii.New(iii.Options{URL: e.URL(), Name: "caller", Logger: quiet()})
	defer caller.Close()
	ctx := context.Background()
	_ = caller.WaitConnected(ctx)
	_ = e.WaitUntil(ctx, func() bool { return e.HasFunction("srv::echo") })

	// Baseline: a raw WebSocket echo.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		for {
			t, m, err := ws.Read(r.Context())
			if err != nil {
				return
			}
			_ = ws.Write(r.Context(), t, m)
		}
	}))
	defer echo.Close()
	raw, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(echo.URL, "http"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.CloseNow()

	payload := json.RawMessage(`{"n":1}`)
	bus := make([]time.Duration, 0, b.N)
	base := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := caller.Invoke(ctx, iii.Call{FunctionID: "srv::echo", Data: payload}); err != nil {
			b.Fatal(err)
		}
		bus = append(bus, time.Since(t0))
		t1 := time.Now()
		_ = raw.Write(ctx, websocket.MessageText, payload)
		if _, _, err := raw.Read(ctx); err != nil {
			b.Fatal(err)
		}
		base = append(base, time.Since(t1))
	}
	b.StopTimer()
	p50, p99 := percentiles(bus)
	b50, b99 := percentiles(base)
	b.ReportMetric(float64(p50.Microseconds()), "bus-p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "bus-p99-µs")
	b.ReportMetric(float64(b50.Microseconds()), "rawws-p50-µs")
	b.ReportMetric(float64(b99.Microseconds()), "rawws-p99-µs")
	if b50 > 0 {
		b.ReportMetric(float64(p50)/float64(b50), "bus/rawws-p50")
	}
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	s := append([]time.Duration{}, d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)*50/100], s[min(len(s)-1, len(s)*99/100)]
}
