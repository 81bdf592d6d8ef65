package worker

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/iii"
)

// claimPrefix starts every namespace claim id:
// code-runner::claim::<namespace segment>@<worker tag>.
const claimPrefix = "code-runner::claim::"

// engineClaims implements core.NamespaceClaims on the engine: a worker's
// claim on a namespace is an internal function id of its own,
// code-runner::claim::<segment>@<tag>, so no two workers ever write one id
// (a 0.22 engine would let the last writer have it, a 0.23 engine would
// refuse the second) and the engine drops a worker's claims with its
// connection. Guests cannot publish a claim id: register_function refuses
// the "code-runner" namespace, and a kept run's guest registers only under
// its own code-runner::<32 hex>:: namespace, which "claim" is not.
type engineClaims struct {
	client *iii.Client
	owners *core.EngineOwners
	tag    string
}

func claimPrefixOf(ns string) string {
	return claimPrefix + strings.TrimSuffix(ns, "::") + "@"
}

// Stake implements core.NamespaceClaims.
func (c *engineClaims) Stake(ctx context.Context, ns string) error {
	id := claimPrefixOf(ns) + c.tag
	c.client.RegisterFunction(iii.FunctionDef{ID: id,
		Description: "Internal: the code-runner worker tagged " + c.tag + " creates or serves namespace " + ns + " for the group (contract §24.2); nothing to call.",
		Metadata:    json.RawMessage(`{"internal":true}`)},
		func(context.Context, iii.Request) (any, error) {
			return nil, &iii.InvocationError{Code: "code-runner::invalid_request", Message: "code-runner::invalid_request: " + id + " marks a namespace claim between code-runner workers; there is nothing to call"}
		})
	return nil
}

// Claimants implements core.NamespaceClaims.
func (c *engineClaims) Claimants(ctx context.Context, ns string) ([]string, error) {
	prefix := claimPrefixOf(ns)
	ids, err := c.owners.ListedIDs(ctx, prefix)
	if err != nil {
		return nil, err
	}
	tags := make([]string, 0, len(ids))
	for _, id := range ids {
		if tag := strings.TrimPrefix(id, prefix); len(tag) == core.TagLen {
			tags = append(tags, tag)
		}
	}
	return tags, nil
}

// Withdraw implements core.NamespaceClaims.
func (c *engineClaims) Withdraw(ns string) {
	c.client.UnregisterFunction(claimPrefixOf(ns) + c.tag)
}
