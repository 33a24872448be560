package lzfse

import "encoding/binary"

// DecodeLZVN decodes a bare LZVN stream (as decmpfs stores it, without a
// "bvxn" block header) into dst and returns the bytes written; the stream
// must end with its end-of-stream opcode. A stream that would write more
// than len(dst) bytes is refused with ErrOutputFull.
func DecodeLZVN(dst, src []byte) (int, error) {
	n, _, err := lzvn(dst, 0, src)
	return n, err
}

// lzvn decodes src into dst from position out (matches may reach back to
// dst[0]) and returns the new position and the bytes of src used, up to
// and including the end-of-stream opcode.
//
// The opcodes (first byte; L literal bytes follow the opcode, M match
// bytes are copied from D back):
//
//	LLMMMDDD DDDDDDDD            small distance: L 0-3, M 3-10, D < 2048
//	LLMMM111 DDDDDDDD DDDDDDDD   large distance (D little-endian)
//	LLMMM110                     previous distance
//	101LLMMM DDDDDDMM DDDDDDDD   medium distance: M 3-34, D < 16384
//	1110LLLL / 11100000 LLLLLLLL literal only: 1-15 / 16-271 bytes
//	1111MMMM / 11110000 MMMMMMMM match only, previous distance
//	00000110 + 7 bytes           end of stream; 00001110, 00010110: nop
//
// Other values are undefined and refused.
func lzvn(dst []byte, out int, src []byte) (int, int, error) {
	in := 0
	d := 0 // the previous distance
	for {
		if in >= len(src) {
			return out, in, corrupt("an LZVN stream without its end-of-stream opcode")
		}
		op := src[in]
		var l, m, oplen int
		newD := -1
		switch {
		case op == 0x06: // end of stream
			if len(src)-in < 8 {
				return out, in, corrupt("a truncated LZVN end-of-stream opcode")
			}
			return out, in + 8, nil
		case op == 0x0e || op == 0x16: // nop
			in++
			continue
		case op >= 0xf0: // match only
			if op == 0xf0 {
				if len(src)-in < 2 {
					return out, in, corrupt("a truncated LZVN opcode")
				}
				m, oplen = int(src[in+1])+16, 2
			} else {
				m, oplen = int(op&0x0f), 1
			}
		case op >= 0xe0: // literal only
			if op == 0xe0 {
				if len(src)-in < 2 {
					return out, in, corrupt("a truncated LZVN opcode")
				}
				l, oplen = int(src[in+1])+16, 2
			} else {
				l, oplen = int(op&0x0f), 1
			}
		case op >= 0xd0 || (op >= 0x70 && op < 0x80): // undefined
			return out, in, corrupt("an undefined LZVN opcode")
		case op&0xe0 == 0xa0: // medium distance
			if len(src)-in < 3 {
				return out, in, corrupt("a truncated LZVN opcode")
			}
			w := int(binary.LittleEndian.Uint16(src[in+1:]))
			l, m, newD, oplen = int(op>>3)&3, (int(op&7)<<2|w&3)+3, w>>2, 3
		case op&7 == 7: // large distance
			if len(src)-in < 3 {
				return out, in, corrupt("a truncated LZVN opcode")
			}
			l, m, newD, oplen = int(op>>6), int(op>>3&7)+3, int(binary.LittleEndian.Uint16(src[in+1:])), 3
		case op&7 == 6: // previous distance (0x06, 0x0e, 0x16 handled above)
			if op < 0x40 {
				return out, in, corrupt("an undefined LZVN opcode")
			}
			l, m, oplen = int(op>>6), int(op>>3&7)+3, 1
		default: // small distance
			if len(src)-in < 2 {
				return out, in, corrupt("a truncated LZVN opcode")
			}
			l, m, newD, oplen = int(op>>6), int(op>>3&7)+3, int(op&7)<<8|int(src[in+1]), 2
		}
		in += oplen
		if l > 0 {
			if l > len(src)-in {
				return out, in, corrupt("an LZVN literal runs past the input")
			}
			if l > len(dst)-out {
				return out, in, ErrOutputFull
			}
			out += copy(dst[out:], src[in:in+l])
			in += l
		}
		if newD >= 0 {
			d = newD
		}
		if m > 0 {
			if d == 0 || d > out {
				return out, in, corrupt("an LZVN match reaches before the output's start")
			}
			if m > len(dst)-out {
				return out, in, ErrOutputFull
			}
			copyMatch(dst, out, d, m)
			out += m
		}
	}
}
