package iiitest

import (
	"context"
	"encoding/json"

	"github.com/code-runner-go/code-runner/iii"
)

// InstallControl adds test-control functions, so tests written in other
// languages can drive the engine over the bus:
//
//	iiitest::close_connection {name}              → {"closed": n}   (abrupt, like an engine crash)
//	iiitest::frames {type?, function_id?, inbound?} → {"frames": [{worker_id, worker, inbound, frame}]}
//	iiitest::config_set {id, value}               → {} or the configuration error
func (e *Engine) InstallControl() {
	e.registerBuiltin("iiitest::close_connection", func(ctx context.Context, caller *econn, data json.RawMessage) (json.RawMessage, *iii.ErrorBody) {
		var in struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(data, &in); err != nil {
			return nil, deserializationError("iiitest::close_connection", err)
		}
		b, _ := json.Marshal(map[string]int{"closed": e.CloseConnection(in.Name)})
		return b, nil
	})
	e.registerBuiltin("iiitest::frames", func(ctx context.Context, caller *econn, data json.RawMessage) (json.RawMessage, *iii.ErrorBody) {
		var in struct {
			Type       string `json:"type"`
			FunctionID string `json:"function_id"`
			Inbound    *bool  `json:"inbound"`
		}
		if err := json.Unmarshal(data, &in); err != nil {
			return nil, deserializationError("iiitest::frames", err)
		}
		type row struct {
			WorkerID string          `json:"worker_id"`
			Worker   string          `json:"worker"`
			Inbound  bool            `json:"inbound"`
			Frame    json.RawMessage `json:"frame"`
		}
		rows := []row{}
		for _, r := range e.Frames() {
			if (in.Type != "" && r.Frame.Type != in.Type) || (in.FunctionID != "" && r.Frame.FunctionID != in.FunctionID) ||
				(in.Inbound != nil && *in.Inbound != r.Inbound) || r.Raw == nil {
				continue
			}
			rows = append(rows, row{WorkerID: r.WorkerID, Worker: r.Worker, Inbound: r.Inbound, Frame: r.Raw})
		}
		b, _ := json.Marshal(map[string]any{"frames": rows})
		return b, nil
	})
	e.registerBuiltin("iiitest::config_set", func(ctx context.Context, caller *econn, data json.RawMessage) (json.RawMessage, *iii.ErrorBody) {
		var in struct {
			ID    string          `json:"id"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(data, &in); err != nil {
			return nil, deserializationError("iiitest::config_set", err)
		}
		if eb := e.Config.SetValue(ctx, in.ID, in.Value); eb != nil {
			return nil, eb
		}
		return json.RawMessage(`{}`), nil
	})
}
