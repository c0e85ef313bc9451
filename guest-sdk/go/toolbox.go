package piton

import (
	"fmt"

	"piton/internal/box"
)

// The component's toolbox interface over the registered tools (package box is what
// its exports call). A bug in a tool's declaration, or an error that is not a
// ToolError, panics: the instance traps, and piton reports it.
func init() {
	box.Tools = func() []box.Decl {
		if err := Check(); err != nil {
			panic("piton: " + err.Error())
		}
		tools := Tools()
		decls := make([]box.Decl, len(tools))
		for i, t := range tools {
			schema, _ := t.spec() // Check made it
			decls[i] = box.Decl{
				Name:        t.name,
				Description: t.Description(),
				InputSchema: schema,
				Parallel:    t.parallel,
				Hints:       box.Hints(t.hints),
				HasHintsFor: t.hintsFor != nil,
			}
		}
		return decls
	}
	box.HintsFor = func(tool, args string) (box.Hints, bool) {
		h, ok := named(tool).callHints(args)
		return box.Hints(h), ok
	}
	box.Run = func(tool, args string) ([]box.Block, *box.Failure) {
		blocks, failure, err := named(tool).run(args)
		if err != nil {
			panic(err.Error())
		}
		return blocks, failure
	}
}

func named(name string) *Tool {
	t := Lookup(name)
	if t == nil {
		panic(fmt.Sprintf("piton: no tool named %q in this component", name))
	}
	return t
}
