// Package ui owns code-runner's injected console UI: the TypeScript/React
// sources, their build, the embedded dist assets, the code-runner::ui-content
// function, trigger registration and dev hot reload.
package ui
