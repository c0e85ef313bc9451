// probe: a read-only Go tool that tries what a buggy or greedy Go tool would, for
// tests/it/lang/go.rs: writing where it may only read, panicking, returning an error
// that is not a ToolError, allocating a lot and returning large strings.
package main

import (
	"errors"
	"os"
	"runtime"
	"strings"

	"piton"
)

// ProbeArgs say what to try.
type ProbeArgs struct {
	// What to do: read, write, panic, error, failed, input, kinds, done, churn.
	Do string `json:"do" enum:"read,write,panic,error,failed,input,kinds,done,churn"`
	// The file to read or write.
	Path string `json:"path,omitempty"`
	// churn: what makes its answer.
	Seed int `json:"seed,omitempty"`
	// churn: how many bytes it answers.
	Size int `json:"size,omitempty"`
	// churn: a text it answers back after its garbage is collected.
	Echo string `json:"echo,omitempty"`
}

var png = []byte("\x89PNG\r\n\x1a\n")

// Try what a buggy Go tool would.
func Probe(args ProbeArgs) (any, error) {
	switch args.Do {
	case "read":
		data, err := os.ReadFile(args.Path)
		if err != nil {
			return nil, piton.Errorf("cannot read: %v", err)
		}
		return string(data), nil
	case "write":
		if err := os.WriteFile(args.Path, []byte("written\n"), 0o644); err != nil {
			return nil, piton.Errorf("cannot write: %v", err)
		}
		return "written", nil
	case "panic":
		var m map[string]int
		m["boom"]++ // a nil map: a runtime panic
		return nil, nil
	case "error":
		return nil, errors.New("a plain error")
	case "failed":
		return nil, piton.Errorf("it failed: %d", 42)
	case "input":
		return nil, piton.InputErrorf("do %q needs more", args.Do)
	case "kinds":
		return []piton.Content{
			piton.Text("text"),
			piton.JSON(map[string][]int{"a": {1, 2}}),
			piton.ImageContent(piton.NewImage(png)),
		}, nil
	case "done":
		return nil, nil
	case "churn":
		return churn(args), nil
	}
	return nil, piton.InputErrorf("unknown do %q", args.Do)
}

// churn allocates about 2.4 MiB of garbage in pieces of 1 to 7 KiB and makes the
// collector run twice while the arguments and the answer being built are live, then
// answers `size` bytes made from `seed`, and the echo.
func churn(args ProbeArgs) string {
	var keep [][]byte
	for i := 0; i < 600; i++ {
		piece := make([]byte, 1024+i%7*1024)
		for j := range piece {
			piece[j] = byte(i + j)
		}
		keep = append(keep, piece)
		if len(keep) > 64 {
			keep = keep[1:]
		}
		if i == 300 {
			runtime.GC()
		}
	}
	var b strings.Builder
	for i := 0; i < args.Size; i++ {
		b.WriteByte(byte('a' + (args.Seed*31+i*7)%26))
	}
	runtime.GC()
	return b.String() + "|" + args.Echo
}

func init() {
	piton.Register(Probe, piton.Name("go_probe"), piton.ReadOnly(), piton.OpenWorld(false))
}

func main() {}
