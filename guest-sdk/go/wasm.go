//go:build wasip1

package piton

// The component's exports (the generated bindings of the toolbox-plugin world): only
// in the wasip1 build piton makes; a native build (go test) runs the tools directly.
import _ "piton/internal/wit/exports/wit_exports"
