package core

// The languages the tests' fake engines run. Core itself names none: the
// worker's engines say theirs.
const (
	LangNode   Lang = "node"
	LangPython Lang = "python"
)

// testLangs are the languages a request may name in the tests, sorted.
var testLangs = []Lang{LangNode, LangPython}

// decodeRunCall is the run route's decoder over testLangs.
func decodeRunCall(call *Call) error {
	return (&RunService{Engines: map[Lang]Engine{LangNode: nil, LangPython: nil}}).DecodeRunCall(call)
}
