package codesign

import "errors"

// Apple's productsign writes the CMS signature of a .pkg in BER, with
// indefinite lengths; relic's pkcs7 (encoding/asn1 underneath) reads DER
// only. berToDER rewrites every length in definite form, and drops what
// follows the outer element (the zero padding of the signature's reserved
// heap space). It is bounded by its input: lengths are checked against the
// bytes there, nesting is at most maxBERDepth, and nothing is allocated
// from a declared length (go-asn1-ber, which relic uses for this, allocates
// whatever length a header claims).
const maxBERDepth = 64

var errBER = errors.New("malformed BER")

func berToDER(b []byte) ([]byte, error) {
	out, _, err := berElement(b, 0)
	return out, err
}

// berElement converts the element at the start of b and returns it and the
// bytes after it.
func berElement(b []byte, depth int) (der, rest []byte, err error) {
	if depth > maxBERDepth {
		return nil, nil, errors.New("BER nests too deep")
	}
	if len(b) < 2 {
		return nil, nil, errBER
	}
	tagLen := 1
	if b[0]&0x1f == 0x1f { // high tag number: base-128 digits
		for tagLen < len(b) && b[tagLen]&0x80 != 0 {
			if tagLen++; tagLen > 5 {
				return nil, nil, errBER
			}
		}
		tagLen++
	}
	if tagLen >= len(b) {
		return nil, nil, errBER
	}
	tag, constructed := b[:tagLen], b[0]&0x20 != 0
	p := b[tagLen:]
	var content []byte
	switch l := p[0]; {
	case l == 0x80: // indefinite: constructed only, children up to 00 00
		if !constructed {
			return nil, nil, errBER
		}
		p = p[1:]
		var body []byte
		for {
			if len(p) >= 2 && p[0] == 0 && p[1] == 0 {
				p = p[2:]
				break
			}
			child, r, err := berElement(p, depth+1)
			if err != nil {
				return nil, nil, err
			}
			body, p = append(body, child...), r
		}
		return append(append(append([]byte{}, tag...), derLength(len(body))...), body...), p, nil
	case l < 0x80:
		if int(l) > len(p)-1 {
			return nil, nil, errBER
		}
		content, rest = p[1:1+int(l)], p[1+int(l):]
	default:
		n := int(l & 0x7f)
		if n > 4 || n+1 > len(p) {
			return nil, nil, errBER
		}
		length := 0
		for _, c := range p[1 : 1+n] {
			length = length<<8 | int(c)
		}
		if length < 0 || length > len(p)-1-n {
			return nil, nil, errBER
		}
		content, rest = p[1+n:1+n+length], p[1+n+length:]
	}
	if constructed { // a definite container may still hold indefinite children
		var body []byte
		for len(content) > 0 {
			child, r, err := berElement(content, depth+1)
			if err != nil {
				return nil, nil, err
			}
			body, content = append(body, child...), r
		}
		content = body
	}
	return append(append(append([]byte{}, tag...), derLength(len(content))...), content...), rest, nil
}

func derLength(n int) []byte {
	if n < 0x80 {
		return []byte{byte(n)}
	}
	var digits []byte
	for v := n; v > 0; v >>= 8 {
		digits = append([]byte{byte(v)}, digits...)
	}
	return append([]byte{0x80 | byte(len(digits))}, digits...)
}
