package node

import (
	"context"
	"sync"
	"time"
)

// pool keeps up to warm_pool_node booted hosts (isolate and context
// created) with the live heap cap. A pooled host is handed out once; taking
// one starts a refill. Hosts built for another heap cap are discarded.
type pool struct {
	e      *Engine
	mu     sync.Mutex
	ready  []*hostProc
	wake   chan struct{}
	stop   chan struct{}
	closed bool
	wg     sync.WaitGroup
}

func newPool(e *Engine) *pool {
	p := &pool{e: e, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	p.wg.Add(1)
	go p.fill()
	p.kick()
	return p
}

func (p *pool) kick() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// take returns a ready host with heap cap heapMB and iii.files as asked, or nil.
func (p *pool) take(heapMB int64, filesOn bool) *hostProc {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.kick()
	for len(p.ready) > 0 {
		h := p.ready[0]
		p.ready = p.ready[1:]
		if h.dead() {
			continue
		}
		if h.heapMB != heapMB || h.filesOn != filesOn {
			h.kill("destroy")
			continue
		}
		return h
	}
	return nil
}

// give takes back a host whose runtime ended cleanly: it is reset to a fresh
// isolate in the background and parked if the pool has room.
func (p *pool) give(h *hostProc) {
	cfg := p.e.opts.Live()
	p.mu.Lock()
	room := !p.closed && len(p.ready) < int(cfg.WarmPoolNode)
	p.mu.Unlock()
	if !room || !h.recycle(cfg.HeapMB, cfg.ScratchMB > 0) {
		h.kill("destroy")
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.ready) >= int(p.e.opts.Live().WarmPoolNode) {
		h.kill("destroy")
		return
	}
	p.ready = append(p.ready, h)
}

// Size returns how many hosts are parked.
func (p *pool) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ready)
}

func (p *pool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	ready := p.ready
	p.ready = nil
	p.mu.Unlock()
	close(p.stop)
	p.wg.Wait()
	for _, h := range ready {
		h.kill("destroy")
	}
}

// fill keeps the pool at the live size, retrying boot failures with backoff
// (1 s doubling to 30 s).
func (p *pool) fill() {
	defer p.wg.Done()
	backoff := time.Second
	for {
		select {
		case <-p.stop:
			return
		case <-p.wake:
		case <-time.After(time.Second):
		}
		for {
			cfg := p.e.opts.Live()
			want := int(cfg.WarmPoolNode)
			p.mu.Lock()
			// Drop hosts built for another heap cap, and extras.
			kept := p.ready[:0]
			for _, h := range p.ready {
				if h.dead() || h.heapMB != cfg.HeapMB || h.filesOn != (cfg.ScratchMB > 0) || len(kept) >= want {
					h.kill("destroy")
					continue
				}
				kept = append(kept, h)
			}
			p.ready = kept
			n := len(p.ready)
			closed := p.closed
			p.mu.Unlock()
			if closed || n >= want {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			h, err := p.e.spawn(ctx, cfg.HeapMB, cfg.ScratchMB > 0)
			cancel()
			if err != nil {
				p.e.log.Warn("warm pool: isolate host failed to boot; retrying", "err", err, "backoff", backoff)
				select {
				case <-p.stop:
					return
				case <-time.After(backoff):
				}
				if backoff *= 2; backoff > 30*time.Second {
					backoff = 30 * time.Second
				}
				continue
			}
			backoff = time.Second
			p.mu.Lock()
			if p.closed {
				p.mu.Unlock()
				h.kill("destroy")
				return
			}
			p.ready = append(p.ready, h)
			p.mu.Unlock()
		}
	}
}
