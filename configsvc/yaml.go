package configsvc

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// LookupEnv resolves an environment variable; os.LookupEnv satisfies it.
type LookupEnv func(name string) (string, bool)

// placeholder matches ${VAR} and ${VAR:default}.
var placeholder = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}`)

// ParseYAML parses a configuration file (docs/behaviour.md#configuration-file): either the flat key
// mapping, or the configuration worker's fs-adapter layout whose top-level
// `value` key holds the mapping. ${VAR} and ${VAR:default} placeholders are
// expanded through env (a value that is only a placeholder is re-parsed as a
// YAML scalar, so "${PORT:3111}" becomes the integer 3111). An empty document
// yields the defaults. Every problem — YAML syntax, unset variables, schema
// violations — is reported at once in a *ValidationError.
func ParseYAML(data []byte, env LookupEnv) (Config, error) {
	if env == nil {
		env = os.LookupEnv
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return Config{}, validationErr(Problem{Text: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")})
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return Defaults(), nil
	}
	doc := root.Content[0]
	if doc.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(doc.Content); i += 2 {
			if doc.Content[i].Value == "value" {
				doc = doc.Content[i+1]
				break
			}
		}
	}
	var problems []Problem
	val := toValue(doc, "", env, &problems)
	if len(problems) > 0 {
		// Report schema problems too, so one edit shows everything wrong.
		if _, err := FromValue(val); err != nil {
			if ve, ok := err.(*ValidationError); ok {
				for _, e := range ve.errs.Errors {
					if p, ok := e.(Problem); ok && !hasPointer(problems, p.Pointer) {
						problems = append(problems, p)
					}
				}
			}
		}
		return Config{}, validationErr(problems...)
	}
	cfg, err := FromValue(val)
	if err != nil {
		return Config{}, err
	}
	// A file is one host's configuration: its python_path must be there.
	if ps := HostPathProblems(cfg.PythonPath); len(ps) > 0 {
		return Config{}, validationErr(ps...)
	}
	return cfg, nil
}

func hasPointer(ps []Problem, ptr string) bool {
	for _, p := range ps {
		if p.Pointer == ptr {
			return true
		}
	}
	return false
}

// toValue converts a YAML node into a JSON-compatible Go value, expanding
// placeholders in string scalars.
func toValue(n *yaml.Node, ptr string, env LookupEnv, problems *[]Problem) any {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return toValue(n.Content[0], ptr, env, problems)
	case yaml.AliasNode:
		return toValue(n.Alias, ptr, env, problems)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			m[k] = toValue(n.Content[i+1], ptr+"/"+escapePointer(k), env, problems)
		}
		return m
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, c := range n.Content {
			s[i] = toValue(c, fmt.Sprintf("%s/%d", ptr, i), env, problems)
		}
		return s
	case yaml.ScalarNode:
		if n.Tag == "!!str" && strings.Contains(n.Value, "${") {
			return expand(n.Value, ptr, env, problems)
		}
		var v any
		if err := n.Decode(&v); err != nil {
			*problems = append(*problems, Problem{Pointer: ptr, Text: err.Error()})
			return nil
		}
		return v
	}
	return nil
}

// expand substitutes placeholders in s. When s is exactly one placeholder
// the substituted text is re-parsed as a YAML scalar.
func expand(s, ptr string, env LookupEnv, problems *[]Problem) any {
	failed := false
	out := placeholder.ReplaceAllStringFunc(s, func(m string) string {
		sub := placeholder.FindStringSubmatch(m)
		name := sub[1]
		if v, ok := env(name); ok {
			return v
		}
		if strings.Contains(m, ":") {
			return sub[2]
		}
		failed = true
		*problems = append(*problems, Problem{Pointer: ptr, Text: fmt.Sprintf("environment variable %s is not set and the placeholder has no default (write ${%s:default})", name, name)})
		return m
	})
	if failed {
		return nil
	}
	if loc := placeholder.FindStringIndex(s); loc != nil && loc[0] == 0 && loc[1] == len(s) {
		var v any
		if err := yaml.Unmarshal([]byte(out), &v); err == nil {
			switch v.(type) {
			case map[string]any, []any:
				return out // only scalars are re-parsed
			}
			return v
		}
	}
	return out
}

// LoadFile reads and parses the configuration file at path (see ParseYAML).
// A missing file is reported with an error satisfying os.IsNotExist.
func LoadFile(path string, env LookupEnv) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	return ParseYAML(data, env)
}
