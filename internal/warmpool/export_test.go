package warmpool

// waiting is how many BorrowWait callers are queued (tests wait on it
// instead of sleeping until a goroutine has queued).
func (p *Pool[T]) waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waitq)
}
