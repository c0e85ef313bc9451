// notes-go: two tools over text files in a folder piton.toml grants, in Go.
//
// Build: piton build plugins/notes-go           (gives plugins/notes-go/notes-go.wasm)
// Call:  piton call read_note '{"path": "/data/notes.txt"}' --plugins plugins/notes-go
//
//	(after granting a folder as /data in piton.toml; see README.md)
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"piton"
)

// ReadNoteArgs are the arguments of read_note.
type ReadNoteArgs struct {
	// The file, such as /data/notes.txt.
	Path string `json:"path"`
	// Only the lines that hold this text.
	Grep string `json:"grep,omitempty"`
}

// Read a text file of a granted folder, or only its lines that hold a text.
func ReadNote(args ReadNoteArgs) (string, error) {
	if !strings.HasPrefix(args.Path, "/") {
		return "", piton.InputErrorf("path must be an absolute path, such as /data/notes.txt")
	}
	data, err := os.ReadFile(args.Path)
	if err != nil {
		return "", piton.Fail(describe(args.Path, err))
	}
	if args.Grep == "" {
		return string(data), nil
	}
	var kept []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, args.Grep) {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "\n"), nil
}

// NoteArgs are the arguments of note.
type NoteArgs struct {
	// The file, such as /data/notes.txt.
	Path string `json:"path"`
	// A line to add to the end of the file first.
	Add *string `json:"add,omitempty"`
}

// Tally is what note answers.
type Tally struct {
	Lines int `json:"lines"`
	Words int `json:"words"`
	Bytes int `json:"bytes"`
}

// Count the lines, words and bytes of a text file in a granted folder. With `add`,
// first add that line to its end.
func Note(args NoteArgs) (Tally, error) {
	if !strings.HasPrefix(args.Path, "/") {
		return Tally{}, piton.InputErrorf("path must be an absolute path, such as /data/notes.txt")
	}
	if args.Add != nil {
		if strings.Contains(*args.Add, "\n") {
			return Tally{}, piton.InputErrorf("add must be one line (no newline)")
		}
		// Opened for writing at its end (Go's O_APPEND is not one WASI preview 1
		// passes through piton's sandbox).
		file, err := os.OpenFile(args.Path, os.O_WRONLY, 0)
		if err != nil {
			return Tally{}, piton.Fail(describe(args.Path, err))
		}
		_, err = file.Seek(0, io.SeekEnd)
		if err == nil {
			_, err = fmt.Fprintln(file, *args.Add)
		}
		if closeErr := file.Close(); err == nil {
			err = closeErr
		}
		if err != nil {
			return Tally{}, piton.Errorf("cannot add to %s: %v", args.Path, err)
		}
	}
	file, err := os.Open(args.Path)
	if err != nil {
		return Tally{}, piton.Fail(describe(args.Path, err))
	}
	defer file.Close()
	var tally Tally
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		tally.Lines++
		tally.Words += len(strings.Fields(scanner.Text()))
		tally.Bytes += len(scanner.Bytes()) + 1
	}
	if err := scanner.Err(); err != nil {
		return Tally{}, piton.Errorf("cannot read %s: %v", args.Path, err)
	}
	return tally, nil
}

// describe says why a file could not be opened, in words the model can act on.
func describe(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist", path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s may not be changed by this call", path)
	}
	return fmt.Errorf("cannot open %s: %v", path, err)
}

// noteHints: a call without `add` only reads, so the host gives it a read-only view
// of its folders, whatever piton.toml grants.
func noteHints(args map[string]any) *piton.Hints {
	if _, adds := args["add"]; adds {
		return nil // the tool's own hints
	}
	hints := piton.NewHints(piton.ReadOnly(), piton.OpenWorld(false))
	return &hints
}

func init() {
	piton.Register(ReadNote, piton.ReadOnly(), piton.OpenWorld(false))
	// The worst case, a call with `add`: it changes a file that exists (destructive:
	// an add-only grant would only let it make new files), and a second call adds
	// again. It never leaves its folders.
	piton.Register(Note, piton.OpenWorld(false), piton.HintsFor(noteHints))
}

func main() {}
