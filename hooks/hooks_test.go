package hooks

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
)

func appendStage(name string) Stage[[]string] {
	return Stage[[]string]{Name: name, Fn: func(ctx context.Context, v []string) ([]string, error) {
		return append(append([]string{}, v...), name), nil
	}}
}

func TestPointRunsStagesInOrder(t *testing.T) {
	p := NewPoint[[]string](PreGenerate)
	p.Add(appendStage("a"))
	p.Add(appendStage("b"))
	got, err := p.Run(context.Background(), nil)
	if err != nil || !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("%v %v", got, err)
	}
	if !reflect.DeepEqual(p.Names(), []string{"a", "b"}) {
		t.Fatal(p.Names())
	}
}

func TestPointStopsAtFirstError(t *testing.T) {
	p := NewPoint[int](ConfigChanged)
	boom := errors.New("boom")
	ran := false
	p.Add(Stage[int]{Name: "inc", Fn: func(ctx context.Context, v int) (int, error) { return v + 1, nil }})
	p.Add(Stage[int]{Name: "fail", Fn: func(ctx context.Context, v int) (int, error) { return 0, boom }})
	p.Add(Stage[int]{Name: "never", Fn: func(ctx context.Context, v int) (int, error) { ran = true; return v, nil }})
	v, err := p.Run(context.Background(), 1)
	if !errors.Is(err, boom) || v != 2 || ran {
		t.Fatalf("v=%d err=%v ran=%v", v, err, ran)
	}
	if err.Error() != "hook config_changed, stage fail: boom" {
		t.Fatal(err)
	}
}

func TestPointReplaceDuringRuns(t *testing.T) {
	p := NewPoint[[]string](PreGenerate)
	p.Replace([]Stage[[]string]{appendStage("x"), appendStage("y")})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 500; j++ {
				got, _ := p.Run(context.Background(), nil)
				if len(got) != 2 {
					t.Errorf("a run saw a partial stage list: %v", got)
					return
				}
			}
		}()
	}
	for j := 0; j < 500; j++ {
		if j%2 == 0 {
			p.Replace([]Stage[[]string]{appendStage("p"), appendStage("q")})
		} else {
			p.Replace([]Stage[[]string]{appendStage("x"), appendStage("y")})
		}
	}
	wg.Wait()
}
