package graph

import (
	"encoding/binary"
	"reflect"
	"unsafe"
)

// A field's zero test decides whether it holds its zero value exactly as
// reflect.Value.IsZero does, without reflection: setFields runs it on
// every field of every node's update, and reflect's per-call checks in
// Value.Field cost more than the test itself.
//
// New compiles each field's type into a byte mask over the field: a bit
// is set where a value's bit decides whether it is zero. A field is zero
// when every masked bit is 0. The mask is
//
//   - every bit of bools and integers, and the word of pointers, maps,
//     channels and funcs, which are nil iff that word is 0;
//   - the data word of a slice and the type word of an interface: nil iff
//     that word is 0 (the other words are then 0 as well);
//   - the length word of a string: an empty string may have a data
//     pointer;
//   - every bit but the sign of a float or of either half of a complex
//     number, so that -0.0 counts as zero, as it does for reflect;
//   - nothing of padding, which may hold anything, or of blank (_) struct
//     fields, which reflect and == skip;
//   - and so on, field by field and element by element, through structs
//     and arrays.
//
// The mask is then tested a word at a time where alignment allows. Fields
// larger than maxMaskedField are left to reflect.
//
// The tests read the state through unsafe pointers, at offsets within a
// field that reflect reported for S, with loads no wider than the
// alignment of S (the state's address is a multiple of it) and never past
// the field's end; the loads are of pointer-free integer types, so a word
// holding a pointer is only read, as bits.
type zeroTest struct {
	off   uintptr // from the start of the state
	width uint8   // 1, 2, 4 or 8 bytes
	mask  uint64
}

// maxMaskedField bounds the mask built for one field; larger fields are
// tested with reflect.
const maxMaskedField = 1024

// zeroTests compiles the tests of a field of type t at offset off in a
// state whose alignment is align. ok is false when reflect must do it.
func zeroTests(t reflect.Type, off uintptr, align int) (tests []zeroTest, ok bool) {
	size := t.Size()
	if size > maxMaskedField {
		return nil, false
	}
	mask := make([]byte, size)
	zeroMask(t, mask)
	for o := uintptr(0); o < size; {
		w := uintptr(8)
		for w > 1 && (w > uintptr(align) || (off+o)%w != 0 || o+w > size) {
			w /= 2
		}
		var m uint64
		switch w {
		case 8:
			m = binary.NativeEndian.Uint64(mask[o:])
		case 4:
			m = uint64(binary.NativeEndian.Uint32(mask[o:]))
		case 2:
			m = uint64(binary.NativeEndian.Uint16(mask[o:]))
		default:
			m = uint64(mask[o])
		}
		if m != 0 {
			tests = append(tests, zeroTest{off: off + o, width: uint8(w), mask: m})
		}
		o += w
	}
	return tests, true
}

// zeroMask sets the bits of mask (a value of type t) that decide whether
// the value is zero.
func zeroMask(t reflect.Type, mask []byte) {
	const word = unsafe.Sizeof(uintptr(0))
	all := func(b []byte) {
		for i := range b {
			b[i] = 0xff
		}
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Pointer, reflect.UnsafePointer, reflect.Map, reflect.Chan, reflect.Func:
		all(mask)
	case reflect.Slice, reflect.Interface:
		all(mask[:word])
	case reflect.String:
		all(mask[word : 2*word])
	case reflect.Float32:
		binary.NativeEndian.PutUint32(mask, 1<<31-1)
	case reflect.Float64:
		binary.NativeEndian.PutUint64(mask, 1<<63-1)
	case reflect.Complex64:
		binary.NativeEndian.PutUint32(mask, 1<<31-1)
		binary.NativeEndian.PutUint32(mask[4:], 1<<31-1)
	case reflect.Complex128:
		binary.NativeEndian.PutUint64(mask, 1<<63-1)
		binary.NativeEndian.PutUint64(mask[8:], 1<<63-1)
	case reflect.Array:
		n := t.Elem().Size()
		for i := range t.Len() {
			zeroMask(t.Elem(), mask[uintptr(i)*n:uintptr(i+1)*n])
		}
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.Name != "_" {
				zeroMask(f.Type, mask[f.Offset:f.Offset+f.Type.Size()])
			}
		}
	default:
		panic("graph: no zero mask for kind " + t.Kind().String())
	}
}

// isZero reports whether the field tested by tests is zero in the state
// at p.
func isZero(tests []zeroTest, p unsafe.Pointer) bool {
	for i := range tests {
		z := &tests[i]
		q := unsafe.Add(p, z.off)
		var v uint64
		switch z.width {
		case 8:
			v = *(*uint64)(q)
		case 4:
			v = uint64(*(*uint32)(q))
		case 2:
			v = uint64(*(*uint16)(q))
		default:
			v = uint64(*(*uint8)(q))
		}
		if v&z.mask != 0 {
			return false
		}
	}
	return true
}
