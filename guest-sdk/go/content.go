package piton

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"piton/internal/box"
)

// Image is an image returned to the model: its media type and encoded bytes.
// [NewImage] finds the type of a PNG, JPEG, GIF or WebP from its bytes.
type Image struct {
	MimeType string
	Data     []byte
}

// NewImage is an Image of the encoded bytes data, whose type it finds from them
// (PNG, JPEG, GIF, WebP); it panics for other bytes: give those as
// Image{MimeType: "image/svg+xml", Data: data}.
func NewImage(data []byte) Image {
	mime := sniffImage(data)
	if mime == "" {
		panic(`piton.NewImage: the bytes are not PNG, JPEG, GIF or WebP: give the type, as piton.Image{MimeType: "image/svg+xml", Data: data}`)
	}
	return Image{MimeType: mime, Data: data}
}

func sniffImage(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff}):
		return "image/jpeg"
	case bytes.HasPrefix(b, []byte("GIF8")):
		return "image/gif"
	case len(b) >= 12 && bytes.HasPrefix(b, []byte("RIFF")) && string(b[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

// Content is one block of a result: [Text], [JSON] or an [Image] as
// ImageContent. Return a []Content for a result of several blocks.
type Content struct {
	kind  box.Kind
	text  string
	value any
	image Image
}

// Text is a text block, given to the model as it is.
func Text(s string) Content { return Content{kind: box.Text, text: s} }

// JSON is a block of v as JSON. A value that cannot become JSON stops the run.
func JSON(v any) Content { return Content{kind: box.JSON, value: v} }

// ImageContent is an image block.
func ImageContent(img Image) Content { return Content{kind: box.Image, image: img} }

var (
	imageType   = reflect.TypeFor[Image]()
	contentType = reflect.TypeFor[Content]()
)

// toBlocks is what the model gets of a tool's return value, as the seed's tool model
// says: a string as is, nil as nothing ("(done)"), an Image as an image, a []Content
// block by block, a slice of strings and Images (a []string, or a []any holding an
// Image) block by block (anything else in it as JSON), and anything else as JSON.
// A value that cannot become JSON is an error, which stops the run.
func toBlocks(value any) ([]box.Block, error) {
	switch v := value.(type) {
	case nil:
		return nil, nil
	case string:
		return []box.Block{{Kind: box.Text, Text: v}}, nil
	case Image:
		return []box.Block{imageBlock(v)}, nil
	case *Image:
		if v == nil {
			return nil, nil
		}
		return []box.Block{imageBlock(*v)}, nil
	case Content:
		return contentBlocks([]Content{v})
	case []Content:
		return contentBlocks(v)
	case []string:
		blocks := make([]box.Block, len(v))
		for i, s := range v {
			blocks[i] = box.Block{Kind: box.Text, Text: s}
		}
		return blocks, nil
	case []any:
		if len(v) > 0 && (hasImage(v) || allStrings(v)) {
			var mixed []Content
			for _, item := range v {
				switch item := item.(type) {
				case string:
					mixed = append(mixed, Text(item))
				case Image:
					mixed = append(mixed, ImageContent(item))
				case Content:
					mixed = append(mixed, item)
				default:
					mixed = append(mixed, JSON(item))
				}
			}
			return contentBlocks(mixed)
		}
	}
	rv := reflect.ValueOf(value)
	if (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface) && rv.IsNil() {
		return nil, nil
	}
	text, err := toJSON(value, "the result")
	if err != nil {
		return nil, err
	}
	return []box.Block{{Kind: box.JSON, Text: text}}, nil
}

func hasImage(items []any) bool {
	for _, item := range items {
		if _, ok := item.(Image); ok {
			return true
		}
	}
	return false
}

func allStrings(items []any) bool {
	for _, item := range items {
		if _, ok := item.(string); !ok {
			return false
		}
	}
	return true
}

func imageBlock(img Image) box.Block {
	return box.Block{Kind: box.Image, MimeType: img.MimeType, Data: img.Data}
}

func contentBlocks(content []Content) ([]box.Block, error) {
	blocks := make([]box.Block, 0, len(content))
	for i, c := range content {
		switch c.kind {
		case box.Text:
			blocks = append(blocks, box.Block{Kind: box.Text, Text: c.text})
		case box.Image:
			if !strings.HasPrefix(c.image.MimeType, "image/") {
				return nil, fmt.Errorf("block %d is an image whose MimeType %q is not image/...", i, c.image.MimeType)
			}
			blocks = append(blocks, imageBlock(c.image))
		default:
			text, err := toJSON(c.value, fmt.Sprintf("block %d", i))
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, box.Block{Kind: box.JSON, Text: text})
		}
	}
	return blocks, nil
}

func toJSON(v any, what string) (string, error) {
	for t := reflect.TypeOf(v); t != nil; t = t.Elem() {
		if t == imageType || t == contentType {
			return "", fmt.Errorf("%s holds a piton.%s inside a value sent as JSON: return it alone, or in a []piton.Content", what, t.Name())
		}
		if k := t.Kind(); k != reflect.Pointer && k != reflect.Slice && k != reflect.Array {
			break
		}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("%s cannot become JSON: %w", what, err)
	}
	return string(data), nil
}

// String is the block as the model reads it: its text, its JSON text, or
// "[image TYPE, N bytes]".
func (c Content) String() string {
	switch c.kind {
	case box.Image:
		return fmt.Sprintf("[image %s, %d bytes]", c.image.MimeType, len(c.image.Data))
	case box.JSON:
		if c.text != "" {
			return c.text
		}
		text, err := toJSON(c.value, "the block")
		if err != nil {
			return err.Error()
		}
		return text
	}
	return c.text
}

// Image is the block's image, if it is one.
func (c Content) Image() (Image, bool) {
	return c.image, c.kind == box.Image
}

// IsJSON is true for a JSON block.
func (c Content) IsJSON() bool { return c.kind == box.JSON }
