package piton

import "fmt"

// ToolError is a failure the model sees as an error result and can handle: the run
// goes on. Return it (or an error wrapping it) from a tool; see [Errorf] and [Fail].
type ToolError struct {
	Message string
}

func (e *ToolError) Error() string { return e.Message }

// InputError says the arguments are wrong: the model gets "(input error: MESSAGE)".
type InputError struct {
	Message string
}

func (e *InputError) Error() string { return e.Message }

// Errorf returns a [ToolError] with a formatted message.
func Errorf(format string, args ...any) error {
	return &ToolError{Message: fmt.Sprintf(format, args...)}
}

// Fail returns err as a [ToolError], so the model sees its message as an error result
// (any other error a tool returns stops the run, as a panic does). Fail(nil) is nil.
func Fail(err error) error {
	if err == nil {
		return nil
	}
	return &ToolError{Message: err.Error()}
}

// InputErrorf returns an [InputError] with a formatted message.
func InputErrorf(format string, args ...any) error {
	return &InputError{Message: fmt.Sprintf(format, args...)}
}
