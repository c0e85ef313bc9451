// Package export_piton_tool_toolbox implements the contract's toolbox interface
// (the functions the generated bindings in wit_exports call) over package box,
// which package piton fills with the registered tools.
package export_piton_tool_toolbox

import (
	"piton/internal/box"
	"piton/internal/wit/imports/piton_tool_toolbox"
	types "piton/internal/wit/imports/piton_tool_types"
	wit "piton/internal/witpkg/types"
)

func hints(h box.Hints) types.ToolHints {
	return types.ToolHints{
		ReadOnly:    h.ReadOnly,
		Destructive: h.Destructive,
		Idempotent:  h.Idempotent,
		OpenWorld:   h.OpenWorld,
	}
}

// Tools is the toolbox's `tools`.
func Tools() []piton_tool_toolbox.ToolDecl {
	decls := box.Tools()
	out := make([]piton_tool_toolbox.ToolDecl, len(decls))
	for i, d := range decls {
		out[i] = piton_tool_toolbox.ToolDecl{
			Spec: types.ToolSpec{
				Name:        d.Name,
				Description: d.Description,
				InputSchema: d.InputSchema,
				Parallel:    d.Parallel,
			},
			Hints:       hints(d.Hints),
			HasHintsFor: d.HasHintsFor,
		}
	}
	return out
}

// HintsFor is the toolbox's `hints-for`.
func HintsFor(tool string, args string) wit.Option[types.ToolHints] {
	h, ok := box.HintsFor(tool, args)
	if !ok {
		return wit.None[types.ToolHints]()
	}
	return wit.Some(hints(h))
}

// Run is the toolbox's `run`.
func Run(tool string, args string) wit.Result[[]types.Content, types.ToolError] {
	blocks, failure := box.Run(tool, args)
	if failure != nil {
		if failure.Input {
			return wit.Err[[]types.Content](types.MakeToolErrorInput(failure.Message))
		}
		return wit.Err[[]types.Content](types.MakeToolErrorFailed(failure.Message))
	}
	content := make([]types.Content, len(blocks))
	for i, b := range blocks {
		switch b.Kind {
		case box.JSON:
			content[i] = types.MakeContentJson(b.Text)
		case box.Image:
			content[i] = types.MakeContentImage(types.Image{MimeType: b.MimeType, Data: b.Data})
		default:
			content[i] = types.MakeContentText(b.Text)
		}
	}
	return wit.Ok[[]types.Content, types.ToolError](content)
}
