package piton

import (
	"fmt"
	"os"
	"runtime/debug"

	"piton/internal/box"
)

// The component's toolbox interface over the registered tools (package box is what
// its exports call). A bug in a tool's declaration, an error that is not a ToolError
// and a panic stop the run: the SDK writes what happened last on stderr (whose end
// piton puts in the trap's message) and exits with status 2, which traps.
func init() {
	box.Tools = func() []box.Decl {
		defer stopOnPanic("")
		if err := Check(); err != nil {
			stop("piton: " + err.Error())
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
		defer stopOnPanic(tool)
		h, ok := named(tool).callHints(args)
		return box.Hints(h), ok
	}
	box.Run = func(tool, args string) ([]box.Block, *box.Failure) {
		defer stopOnPanic(tool)
		blocks, failure, err := named(tool).run(args)
		if err != nil {
			stop(err.Error())
		}
		return blocks, failure
	}
}

// stopOnPanic turns a panic into a stop whose message ends stderr, after the stack.
func stopOnPanic(tool string) {
	if r := recover(); r != nil {
		os.Stderr.Write(debug.Stack())
		if tool != "" {
			stop(fmt.Sprintf("panic in tool %s: %v", tool, r))
		}
		stop(fmt.Sprintf("panic: %v", r))
	}
}

// stop ends the instance with message as the last line of its stderr.
func stop(message string) {
	fmt.Fprintln(os.Stderr, message)
	os.Exit(2)
}

func named(name string) *Tool {
	t := Lookup(name)
	if t == nil {
		stop(fmt.Sprintf("piton: no tool named %q in this component", name))
	}
	return t
}
