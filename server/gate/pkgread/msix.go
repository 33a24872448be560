package pkgread

// CheckMSIXXML bounds an XML document of an MSIX package (the block map,
// the manifest) within the default Limits' depth and element count, for a
// verifier about to decode it with encoding/xml.
func CheckMSIXXML(raw []byte, what string) error {
	return checkXML(raw, DefaultLimits(), FormatMSIX, what)
}
