package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWritesAllLand writes from many goroutines while reading;
// under -race this fails if Buffer is not synchronized, and the final
// length fails if a write is lost.
func TestConcurrentWritesAllLand(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				_, _ = b.Write([]byte("ab"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if got := b.String(); len(got) != 8*100*2 || strings.Count(got, "ab") != 800 {
		t.Fatalf("got %d bytes", len(got))
	}
}
