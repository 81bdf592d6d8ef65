package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/iii"
)

// nameWait is how long a worker starting under a name another live worker
// reports waits for that worker to go before it refuses to serve: a
// restarted worker's predecessor may still be counted as connected for a
// moment after it died.
const nameWait = 10 * time.Second

// ErrDuplicateName is the refusal of a worker whose name another live
// worker on the engine already has (contract §24.1).
func ErrDuplicateName(name string) error {
	return fmt.Errorf("another live worker on this engine is already named %q: give every code-runner its own name with III_WORKER_NAME", name)
}

// TagCollisionError is the refusal of a worker whose routing tag (Tag)
// another live code-runner's name also has.
type TagCollisionError struct{ Name, Other string }

// Error names both workers and the fix.
func (e *TagCollisionError) Error() string {
	return fmt.Sprintf("worker names %q and %q (another live code-runner on this engine) have the same routing tag %s, so their runtime ids could not be told apart: give this worker another name with III_WORKER_NAME", e.Name, e.Other, Tag(e.Name))
}

// workerRow is the part of an engine::workers::list row code-runner reads.
type workerRow struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
	Active int    `json:"active_invocations"`
}

// listWorkers asks the engine for its connected workers within timeout.
func listWorkers(ctx context.Context, client *iii.Client, timeout time.Duration) ([]workerRow, error) {
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := client.Invoke(lctx, iii.Call{FunctionID: "engine::workers::list", Data: json.RawMessage(`{}`), Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("engine::workers::list: %w", err)
	}
	var out struct {
		Workers []workerRow `json:"workers"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		return nil, fmt.Errorf("engine::workers::list answered %.200s: %w", res, err)
	}
	return out.Workers, nil
}

// nameTaken asks the engine (engine::workers::list) whether another live
// worker reports name, waiting up to wait for one that does to go. It
// reports true when one stays; an error means the engine could not say,
// or — a *TagCollisionError — that another code-runner's name has this one's
// routing tag.
func nameTaken(ctx context.Context, client *iii.Client, name string, wait time.Duration) (bool, error) {
	deadline := time.Now().Add(wait)
	for {
		workers, err := listWorkers(ctx, client, 5*time.Second)
		if err != nil {
			return false, err
		}
		self, dup := client.WorkerID(), false
		for _, w := range workers {
			if w.Name == name && w.ID != self {
				dup = true
			}
			if w.Name != name && Tag(w.Name) == Tag(name) && answers(ctx, client, core.WorkerID(core.FnRun, Tag(name))) {
				// Another code-runner's name has the same routing tag: the
				// runtimes of the two could not be told apart.
				return false, &TagCollisionError{Name: name, Other: w.Name}
			}
		}
		if !dup {
			return false, nil
		}
		if time.Now().After(deadline) {
			// Still listed. The engine keeps a connection whose peer died
			// without closing it (a host crash, a lost network) for as long
			// as TCP does: a code-runner under this name answers its own
			// per-worker id at once, a dead one never does.
			return answers(ctx, client, core.WorkerID(core.FnRun, core.TagOf(name))), nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// answers reports whether a worker answers fn at all within a few seconds
// (any answer but function_not_found: an empty request is refused as
// invalid, which is an answer).
func answers(ctx context.Context, client *iii.Client, fn string) bool {
	_, err := client.Invoke(ctx, iii.Call{FunctionID: fn, Data: json.RawMessage(`{}`), Timeout: 3 * time.Second})
	var ie *iii.InvocationError
	if errors.As(err, &ie) {
		return ie.Code != "TIMEOUT" && ie.Code != "function_not_found"
	}
	return err == nil
}

// holdInterval is how often a worker checks, with nothing to prompt it,
// that the ids every worker serves (code-runner::run and the rest) still
// have a holder on the engine. The engine's engine::workers-available
// event for a departed worker, fired after its functions are released,
// prompts the check at once: that is how another worker takes the ids
// over within contract §24.3's 5 s. The timer covers an event that never
// arrived. Each check is a round trip to the engine, a dozen thread
// wake-ups of an otherwise idle worker; at 4 s they were most of its idle
// wake-ups (issue 31).
const holdInterval = 30 * time.Second

// holdSharedIDs keeps the shared ids served while ctx lives. The client
// holds them on standby (iii.Client.RegisterStandby): they are sent only
// from here, when a listing of the engine (engine::functions::list) shows
// no worker holding them — at start, on each engine::workers-available
// event (a send on poke), after a reconnect, and every interval. So a
// worker that joins a group, or reconnects to it, leaves the ids with
// their live holder on both engine versions (on 0.22 its registration
// would have taken them over: the last writer wins), and when the holder
// leaves the engine drops its ids and the survivors register them: on
// 0.22 the last one holds them, on 0.23 the first. The first check runs
// before holdSharedIDs returns; the loop goes on in the background.
// Each listing also tells peers which code-runner workers it saw (their
// per-worker run ids), and says whether this worker (self) holds the
// shared ids — the engine names code-runner::run's worker — which hold is
// told (holderBindings.hold).
func holdSharedIDs(ctx context.Context, client *iii.Client, self, namespace string, ids []string, interval time.Duration, poke <-chan struct{}, reconnect func() <-chan struct{}, peers *peerTags, hold func(bool), log *slog.Logger) {
	// A check that failed (no answer, a bad one) is tried again soon —
	// 0.5, 1, then 2 s later, five times in all — rather than at the next
	// tick, so a takeover prompted by an event still lands within §24.3's
	// 5 s; an engine that keeps failing is left to the ticks. A check that
	// registered ids looks again soon to learn whether this worker holds
	// them (two workers that found them free at once both registered).
	var retry *time.Timer
	var retryC <-chan time.Time
	backoff, failures := time.Duration(0), 0
	soon := func(d time.Duration) {
		if retry == nil {
			retry = time.NewTimer(d)
		} else {
			retry.Reset(d)
		}
		retryC = retry.C
	}
	failed := func() {
		if failures++; failures > 5 {
			return
		}
		backoff = min(max(2*backoff, 500*time.Millisecond), 2*time.Second)
		soon(backoff)
	}
	list := func() ([]core.FunctionRow, error) {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		// A reconnect while the listing waits: its answer would have come
		// on the connection that is gone.
		stop := reconnect()
		go func() {
			select {
			case <-stop:
				cancel()
			case <-lctx.Done():
			}
		}()
		res, err := client.Invoke(lctx, iii.Call{FunctionID: "engine::functions::list", Data: json.RawMessage(`{"prefix":"code-runner::","include_internal":true}`), Timeout: 5 * time.Second})
		if err != nil {
			return nil, err
		}
		return core.FunctionRows(res, namespace)
	}
	// confirm waits (at start only, up to 2 s) until the engine lists the
	// ids just registered, so the worker reports ready serving them and,
	// if it holds them, with the hook bound.
	confirm := func() {
		until := time.Now().Add(2 * time.Second)
		for time.Now().Before(until) {
			rows, err := list()
			if err != nil {
				return
			}
			served, holder := map[string]bool{}, ""
			for _, f := range rows {
				served[f.FunctionID] = true
				if f.FunctionID == core.FnRun {
					holder = f.WorkerName
				}
			}
			all := true
			for _, id := range ids {
				all = all && served[id]
			}
			if all {
				hold(holder == self)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	check := func(first bool) {
		if !client.Connected() {
			return // OnConnected pokes once the connection is back
		}
		rows, err := list()
		if err != nil {
			if first {
				// A worker that cannot learn at start whether another holds
				// the ids serves them rather than nothing; the next check
				// settles it.
				log.Warn("could not ask the engine who holds the shared ids; registering them", "err", err)
				client.Reregister(ids...)
			}
			failed()
			return
		}
		backoff, failures = 0, 0
		served := map[string]bool{}
		for _, f := range rows {
			served[f.FunctionID] = true
			if f.FunctionID == core.FnRun {
				hold(f.WorkerName == self)
			}
			if shared, tag, ok := strings.Cut(f.FunctionID, "@"); ok && shared == core.FnRun {
				peers.see(tag)
			}
		}
		var missing []string
		for _, id := range ids {
			if !served[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			if first {
				log.Debug("registering the shared ids: no worker on the engine holds them", "ids", missing)
			} else {
				log.Info("taking over the shared ids: no worker on the engine holds them any more", "ids", missing)
			}
			client.Reregister(missing...)
			if first {
				confirm()
			}
			soon(300 * time.Millisecond)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_ = client.WaitConnected(wctx) // not yet: OnConnected pokes the loop
	cancel()
	check(true)
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		defer func() {
			if retry != nil {
				retry.Stop()
			}
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-poke:
			case <-retryC:
			}
			retryC = nil
			if retry != nil {
				retry.Stop()
			}
			check(false)
		}
	}()
}

// signal is a broadcast that fires again and again: Next answers a
// channel closed at the next Fire.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

// Next answers a channel closed at the next Fire.
func (s *signal) Next() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Fire closes the channel Next answered, if any.
func (s *signal) Fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// Tag is a worker's routing tag (core.TagOf): every kept runtime id the
// worker mints begins with it, and its per-worker ids end with it.
func Tag(name string) string { return core.TagOf(name) }

// forwarder is core.Forwarder over the worker's engine connection: the
// worker's own call, traced as a child of the call it serves and not
// counted as a guest's (Transport.Internal). A worker that answers is a
// peer seen.
type forwarder struct {
	t     Transport
	peers *peerTags
}

// Forward implements core.Forwarder.
func (f forwarder) Forward(ctx context.Context, functionID string, payload json.RawMessage, timeout time.Duration) (json.RawMessage, error) {
	res, err := f.t.Invoke(ctx, core.Invocation{FunctionID: functionID, Data: payload, Timeout: timeout})
	var re *core.RemoteError
	if err == nil || errors.As(err, &re) && re.Code != "function_not_found" {
		if _, tag, ok := strings.Cut(functionID, "@"); ok {
			f.peers.see(tag)
		}
	}
	return res, err
}

// peerTags is the routing tags of the code-runner workers seen on the
// engine since this worker started: a runtime id whose worker is gone is
// expired only if that worker was ever seen (core.RunService.PeerSeen).
type peerTags struct {
	mu   sync.Mutex
	seen map[string]bool
}

func newPeerTags(own string) *peerTags { return &peerTags{seen: map[string]bool{own: true}} }

func (p *peerTags) see(tag string) {
	p.mu.Lock()
	p.seen[tag] = true
	p.mu.Unlock()
}

// Seen reports whether a worker with tag was seen.
func (p *peerTags) Seen(tag string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[tag]
}

// spreadListFresh is how long a spreader reuses one engine::workers::list
// answer: a full worker answering a burst of calls (a guest looping on
// code-runner::run, say) asks the engine once, not once per call.
const spreadListFresh = 250 * time.Millisecond

// spreader is core.Spreader over engine::workers::list: the other
// connected workers whose per-worker run id was seen (code-runners), the
// fewest active invocations first.
type spreader struct {
	client *iii.Client
	peers  *peerTags
	self   string // this worker's name

	mu   sync.Mutex
	at   time.Time // when tags was listed
	tags []string
}

// Peers implements core.Spreader.
func (s *spreader) Peers(ctx context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.at.IsZero() && time.Since(s.at) < spreadListFresh {
		return s.tags, nil
	}
	tags, err := s.list(ctx)
	if err != nil {
		return nil, err
	}
	s.at, s.tags = time.Now(), tags
	return tags, nil
}

// list asks the engine for the other code-runners, least loaded first.
func (s *spreader) list(ctx context.Context) ([]string, error) {
	workers, err := listWorkers(ctx, s.client, 2*time.Second)
	if err != nil {
		return nil, err
	}
	type peer struct {
		tag    string
		active int
	}
	var ps []peer
	for _, w := range workers {
		tag := Tag(w.Name)
		if w.Name == s.self || w.Status != "connected" || !s.peers.Seen(tag) {
			continue
		}
		ps = append(ps, peer{tag, w.Active})
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].active < ps[j].active })
	tags := make([]string, len(ps))
	for i, p := range ps {
		tags[i] = p.tag
	}
	return tags, nil
}
