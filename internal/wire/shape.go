package wire

// Shape names what a cache key holds.
type Shape string

// The shapes of a cache key's value. ShapeAbsent is no key; ShapeForeign is
// anything cacheguard did not write (or a format it no longer reads).
const (
	ShapeAbsent                Shape = "absent"
	ShapeEnvelope              Shape = "envelope"
	ShapeNullEnvelope          Shape = "null envelope"
	ShapePlaceholder           Shape = "placeholder"
	ShapePlaceholderMarked     Shape = "placeholder, waited on"
	ShapePlaceholderKept       Shape = "placeholder, kept version"
	ShapePlaceholderKeptMarked Shape = "placeholder, kept version, waited on"
	ShapeTombstone             Shape = "version tombstone"
	ShapeForeign               Shape = "foreign"
)

// Shapes lists every shape Classify can return. Tests that run the scripts
// iterate it, so a shape added here needs an expectation for every script.
func Shapes() []Shape {
	return []Shape{
		ShapeAbsent, ShapeEnvelope, ShapeNullEnvelope,
		ShapePlaceholder, ShapePlaceholderMarked, ShapePlaceholderKept, ShapePlaceholderKeptMarked,
		ShapeTombstone, ShapeForeign,
	}
}

// Classify tells the shape of b, a value read from a cache key (nil: absent).
// An envelope whose flags this reader does not implement is foreign.
func Classify(b []byte) Shape {
	if b == nil {
		return ShapeAbsent
	}
	if IsEnvelope(b) {
		switch f := b[FlagsOffset]; {
		case f&^ReadableFlags != 0:
			return ShapeForeign
		case f&(FlagTagged|FlagTagSeen) != 0:
			if _, ok := DecodeEnvelope(b); !ok {
				return ShapeForeign
			}
		case f&FlagNull != 0:
			if len(b) != HeaderSize {
				return ShapeForeign
			}
			return ShapeNullEnvelope
		}
		return ShapeEnvelope
	}
	if p, ok := ParsePlaceholder(b); ok {
		switch {
		case p.Kept && p.Marked:
			return ShapePlaceholderKeptMarked
		case p.Kept:
			return ShapePlaceholderKept
		case p.Marked:
			return ShapePlaceholderMarked
		}
		return ShapePlaceholder
	}
	if IsTombstone(b) {
		return ShapeTombstone
	}
	return ShapeForeign
}

// IsPlaceholder reports whether s is one of the placeholder shapes.
func (s Shape) IsPlaceholder() bool {
	switch s {
	case ShapePlaceholder, ShapePlaceholderMarked, ShapePlaceholderKept, ShapePlaceholderKeptMarked:
		return true
	}
	return false
}
