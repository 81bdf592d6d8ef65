// Package sources reads code-runner's configuration from where it lives:
// the configuration worker over the bus (EngineSource) or a local YAML file
// watched for edits (FileSource). The model they produce — Config, its
// schema, validation and snapshots — is package configsvc, which links
// neither the WebSocket client nor the file watcher.
package sources
