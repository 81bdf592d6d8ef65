// Package limits holds the fixed limits of the guest surface and the
// wording of an over-limit refusal: one place for every engine, the node
// isolate host included, which links nothing of the configuration model.
package limits

import "fmt"

// The fixed limits of the guest surface, one place for every engine, the
// node isolate host included (docs/behaviour.md#python-limits,
// #guest-iii-trigger, #guest-iii-register, #register-validation-order).
const (
	MaxCodeBytes          = 1 << 20 // `code` of a run and `source` of a registration
	MaxPayloadBytes       = 1 << 20 // a handler's payload (python), a guest call's payload (node)
	MaxGuestRequestBytes  = 1 << 20 // one python guest request frame
	MaxFunctionIDBytes    = 512     // any function id a guest names or registers
	MaxActionBytes        = 512     // a guest call's action
	MaxDescriptionBytes   = 4096    // a registration's description
	MaxTriggerConfigBytes = 1 << 20 // a guest trigger's serialized config
	MaxRegistrations      = 256     // functions, triggers and trigger types per runtime
)

// OverLimit is "<what> is <n> bytes; the limit is <max>" (docs/behaviour.md#errors-messages).
func OverLimit(what string, n, max int) string {
	return fmt.Sprintf("%s is %d bytes; the limit is %d", what, n, max)
}

// OverMax is the shorter "<what> is <n> bytes; max <max>".
func OverMax(what string, n, max int) string {
	return fmt.Sprintf("%s is %d bytes; max %d", what, n, max)
}
