package msgpack

import (
	"bytes"

	"github.com/vmihailenco/msgpack/v5"
)

// Codec encodes with MessagePack. The zero value is ready to use and safe
// for concurrent use.
type Codec struct{}

// structTag is the tag fields are named by when they have no `msgpack` tag:
// types already tagged for JSON keep their field names.
const structTag = "json"

// Marshal implements cache.Codec.
func (Codec) Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	// msgpack's own pool: a fresh Encoder allocates its buffers.
	e := msgpack.GetEncoder()
	defer msgpack.PutEncoder(e)
	e.Reset(&buf)
	e.SetCustomStructTag(structTag)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Unmarshal implements cache.Codec.
func (Codec) Unmarshal(data []byte, v any) error {
	d := msgpack.GetDecoder()
	defer msgpack.PutDecoder(d)
	d.Reset(bytes.NewReader(data))
	d.SetCustomStructTag(structTag)
	return d.Decode(v)
}
