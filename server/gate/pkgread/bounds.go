package pkgread

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"io"
)

// The structure bounds of the documents this package decodes (plists, XML
// manifests, the xar TOC) are checked by a cheap walk of their bytes before
// the decoder sees them: the decoders (howett.net/plist, encoding/xml)
// recurse once per nesting level and allocate per node, so a 4 MiB document
// of 100 000 nested arrays, or a binary plist whose arrays share and refer
// back to each other, must be refused before they run, not while.

// checkXML walks the elements of an XML document without building anything:
// at most lim.MaxDepth nested, lim.MaxNodes in all. encoding/xml expands no
// entity but the five predefined ones (a DOCTYPE's entities are not read),
// so an entity bomb ("billion laughs") is only text here. A document that is
// not well-formed is left to the decoder, which says so.
func checkXML(raw []byte, lim Limits, f Format, what string) error {
	d := xml.NewDecoder(bytes.NewReader(raw))
	depth, nodes := 0, 0
	for {
		tok, err := d.RawToken()
		if err != nil {
			return nil // io.EOF, or malformed: the decoder's own error follows
		}
		switch tok.(type) {
		case xml.StartElement:
			depth++
			nodes++
			if depth > lim.MaxDepth {
				return fail(ReasonPackageTooDeep, f, nil, "%s nests elements more than %d deep", what, lim.MaxDepth)
			}
			if nodes > lim.MaxNodes {
				return fail(ReasonPackageTooLarge, f, nil, "%s has more than %d elements", what, lim.MaxNodes)
			}
		case xml.EndElement:
			depth--
		}
	}
}

// checkPlist bounds a property list in any of its three forms (binary,
// XML, OpenStep text) before howett.net/plist decodes it.
func checkPlist(raw []byte, lim Limits, f Format, what string) error {
	if bytes.HasPrefix(raw, []byte("bplist")) {
		return checkBinaryPlist(raw, lim, f, what)
	}
	if err := checkXML(raw, lim, f, what); err != nil {
		return err
	}
	if isXMLDocument(raw) {
		return nil
	}
	return checkTextPlist(raw, lim, f, what)
}

// isXMLDocument reports whether raw is well-formed XML with at least one
// element, which howett.net/plist then decodes as an XML plist (it tries
// the text form only when the XML one fails).
func isXMLDocument(raw []byte) bool {
	d := xml.NewDecoder(bytes.NewReader(raw))
	elements := false
	for {
		tok, err := d.RawToken()
		if errors.Is(err, io.EOF) {
			return elements
		}
		if err != nil {
			return false
		}
		if _, ok := tok.(xml.StartElement); ok {
			elements = true
		}
	}
}

// checkTextPlist bounds the nesting of an OpenStep/GNUstep plist: ( and {
// open a container, ) and } close one; quoted strings and comments are
// skipped.
func checkTextPlist(raw []byte, lim Limits, f Format, what string) error {
	depth, nodes := 0, 0
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '"', '\'':
			for i++; i < len(raw) && raw[i] != c; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		case '/':
			if i+1 < len(raw) && raw[i+1] == '/' {
				for i < len(raw) && raw[i] != '\n' {
					i++
				}
			} else if i+1 < len(raw) && raw[i+1] == '*' {
				end := bytes.Index(raw[i+2:], []byte("*/"))
				if end < 0 {
					return nil
				}
				i += end + 3
			}
		case '(', '{':
			depth++
			nodes++
			if depth > lim.MaxDepth {
				return fail(ReasonPackageTooDeep, f, nil, "%s nests containers more than %d deep", what, lim.MaxDepth)
			}
			if nodes > lim.MaxNodes {
				return fail(ReasonPackageTooLarge, f, nil, "%s has more than %d containers", what, lim.MaxNodes)
			}
		case ')', '}':
			depth--
		}
	}
	return nil
}

// checkBinaryPlist validates a bplist00's trailer and offset table, then
// walks its object graph from the top object: at most lim.MaxNodes objects,
// containers at most lim.MaxDepth deep, no container that contains itself,
// and at most lim.MaxNodes objects once unfolded. Each object is walked once
// (its height and unfolded size remembered), so arrays that share
// sub-arrays — the binary plist's billion laughs, ten arrays of ten
// references to the next — are measured at their size and refused for the
// size they would unfold to, which a decoder into a tree pays.
func checkBinaryPlist(raw []byte, lim Limits, f Format, what string) error {
	bad := func(detail string) error {
		return fail(ReasonPackageUnreadable, f, nil, "%s: %s", what, detail)
	}
	if len(raw) < 8+32 {
		return bad("binary plist shorter than its trailer")
	}
	tr := raw[len(raw)-32:]
	offSize, refSize := int(tr[6]), int(tr[7])
	be := binary.BigEndian
	numObjects, top, tableOff := be.Uint64(tr[8:]), be.Uint64(tr[16:]), be.Uint64(tr[24:])
	if offSize < 1 || offSize > 8 || refSize < 1 || refSize > 8 {
		return bad("binary plist trailer sizes")
	}
	if numObjects > uint64(lim.MaxNodes) {
		return fail(ReasonPackageTooLarge, f, nil, "%s has %d objects, more than %d", what, numObjects, lim.MaxNodes)
	}
	body := uint64(len(raw) - 32)
	if top >= numObjects || tableOff < 8 || tableOff > body || numObjects*uint64(offSize) > body-tableOff {
		return bad("binary plist offset table does not fit")
	}
	sized := func(b []byte, n int) uint64 {
		var v uint64
		for _, c := range b[:n] {
			v = v<<8 | uint64(c)
		}
		return v
	}
	objOffset := func(i uint64) uint64 { return sized(raw[tableOff+i*uint64(offSize):], offSize) }

	// seen[i] is 0 for an object not walked yet, -1 while it is on the
	// current path, else 1 + its container height (0 for a scalar).
	seen := make([]int32, numObjects)
	unfolded := make([]uint32, numObjects) // objects under and including it, saturating past MaxNodes
	limit := uint64(lim.MaxNodes)
	tooDeep := func() error {
		return fail(ReasonPackageTooDeep, f, nil, "%s nests containers more than %d deep", what, lim.MaxDepth)
	}
	var walk func(i uint64, depth int) (int32, error)
	walk = func(i uint64, depth int) (int32, error) {
		switch s := seen[i]; {
		case s == -1:
			return 0, fail(ReasonPackageTooDeep, f, nil, "%s: a binary plist container contains itself", what)
		case s > 0:
			if h := int(s - 1); h > 0 && depth+h-1 > lim.MaxDepth {
				return 0, tooDeep()
			}
			return s - 1, nil
		}
		if unfolded[i] == 0 {
			unfolded[i] = 1
		}
		off := objOffset(i)
		if off < 8 || off >= tableOff {
			return 0, bad("binary plist object outside the object table")
		}
		marker := raw[off]
		kind, n := marker>>4, uint64(marker&0x0f)
		if kind != 0xA && kind != 0xC && kind != 0xD { // not a container
			seen[i] = 1
			return 0, nil
		}
		if depth > lim.MaxDepth {
			return 0, tooDeep()
		}
		p := off + 1
		if n == 0xF { // the count follows as an int object
			if p >= tableOff || raw[p]>>4 != 0x1 || raw[p]&0x0f > 3 {
				return 0, bad("binary plist container count")
			}
			w := uint64(1) << (raw[p] & 0x0f)
			if p+1+w > tableOff {
				return 0, bad("binary plist container count")
			}
			n = sized(raw[p+1:], int(w))
			p += 1 + w
		}
		refs := n
		if kind == 0xD {
			refs = 2 * n // keys, then values
		}
		if refs > tableOff || p+refs*uint64(refSize) > tableOff {
			return 0, bad("binary plist container runs past the object table")
		}
		seen[i] = -1
		var tallest int32
		total := uint64(1)
		for k := uint64(0); k < refs; k++ {
			child := sized(raw[p+k*uint64(refSize):], refSize)
			if child >= numObjects {
				return 0, bad("binary plist reference past the object count")
			}
			h, err := walk(child, depth+1)
			if err != nil {
				return 0, err
			}
			tallest = max(tallest, h)
			if total += uint64(unfolded[child]); total > limit {
				return 0, fail(ReasonPackageTooLarge, f, nil, "%s unfolds to more than %d objects (containers shared by reference)", what, lim.MaxNodes)
			}
		}
		unfolded[i] = uint32(total)
		seen[i] = tallest + 2
		return tallest + 1, nil
	}
	_, err := walk(top, 1)
	return err
}
