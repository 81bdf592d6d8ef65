// Package configsvc owns code-runner's configuration model (docs/behaviour.md#configuration-keys):
// the Config struct and its defaults, the JSON Schema published to the
// configuration worker, YAML parsing with ${VAR} / ${VAR:default} expansion,
// validation that reports every problem at once, the Snapshot (the router
// holds the live one, core.Router.Live), and the Diff that says per key what changed and what
// it affects.
//
// The schema text in schema.json is the single definition: the defaults, the
// manifest's default_config and the Config struct's field set are all checked
// against it. This package publishes configuration; it never reaches into the
// engines (subscribers apply it).
package configsvc
