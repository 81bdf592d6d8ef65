package python

import (
	"context"
	"os"
	"sync"
	"time"
)

// pool keeps up to warm_pool_python interpreters booted (default memory,
// each with its own empty /work) and parked before their first turn. Each
// is handed out once; taking one starts a refill.
type pool struct {
	e      *Engine
	mu     sync.Mutex
	ready  []*interp
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

func (p *pool) take() *interp {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.kick()
	for len(p.ready) > 0 {
		ip := p.ready[0]
		p.ready = p.ready[1:]
		if !ip.dead() {
			return ip
		}
		discard(ip)
	}
	return nil
}

func discard(ip *interp) {
	ip.dispose()
	_ = os.RemoveAll(ip.workDir)
}

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
	for _, ip := range ready {
		discard(ip)
	}
}

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
			want := int(p.e.opts.Live().WarmPoolPython)
			p.mu.Lock()
			for len(p.ready) > want {
				last := p.ready[len(p.ready)-1]
				p.ready = p.ready[:len(p.ready)-1]
				go discard(last)
			}
			n, closed := len(p.ready), p.closed
			p.mu.Unlock()
			if closed || n >= want {
				break
			}
			dir, err := p.e.newWorkDir()
			var ip *interp
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				ip, err = p.e.bootInterp(ctx, defaultMemMB, dir)
				cancel()
				if err != nil {
					_ = os.RemoveAll(dir)
				}
			}
			if err != nil {
				p.e.log.Warn("warm pool: python interpreter failed to boot; retrying", "err", err, "backoff", backoff)
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
				discard(ip)
				return
			}
			p.ready = append(p.ready, ip)
			p.mu.Unlock()
		}
	}
}
