package pkgread

import (
	"io"
	"os"

	"github.com/saferwall/pe"
	pelog "github.com/saferwall/pe/log"
)

// peOptions parses only what the identity needs: the headers and the
// resource directory. Everything else (imports, relocations, the
// certificate table, which codesign verifies with relic) is skipped.
func peOptions() *pe.Options {
	return &pe.Options{
		Logger:                     pelog.NewStdLogger(io.Discard),
		DisableCertValidation:      true,
		DisableSignatureValidation: true,
		OmitExportDirectory:        true,
		OmitImportDirectory:        true,
		OmitExceptionDirectory:     true,
		OmitSecurityDirectory:      true,
		OmitRelocDirectory:         true,
		OmitDebugDirectory:         true,
		OmitArchitectureDirectory:  true,
		OmitGlobalPtrDirectory:     true,
		OmitTLSDirectory:           true,
		OmitLoadConfigDirectory:    true,
		OmitBoundImportDirectory:   true,
		OmitIATDirectory:           true,
		OmitDelayImportDirectory:   true,
		OmitCLRHeaderDirectory:     true,
		OmitCLRMetadata:            true,
		MaxCOFFSymbolsCount:        1,
		MaxRelocEntriesCount:       1,
	}
}

func readPE(ra io.ReaderAt, size int64, lim Limits) (*Identity, error) {
	id := &Identity{Format: FormatPE, Platform: Windows}
	if size > 1<<32-1 {
		return id, fail(ReasonPackageTooLarge, FormatPE, nil, "a PE image is at most 4 GiB, this is %d bytes", size)
	}
	f, err := openPE(ra, size, lim)
	if err != nil {
		return id, err
	}
	defer f.Close()
	if err := f.Parse(); err != nil {
		return id, fail(ReasonPackageUnreadable, FormatPE, err, "parsing the PE headers")
	}
	vi, err := f.ParseVersionResources()
	if err != nil {
		return id, fail(ReasonPackageUnreadable, FormatPE, err, "parsing the version resource")
	}
	if len(vi) == 0 {
		return id, fail(ReasonBundleIDMissing, FormatPE, nil, "the executable has no version information (VERSIONINFO resource)")
	}
	id.VersionInfo = vi
	id.BundleIDs = addID(addID(nil, vi["InternalName"]), vi["ProductName"])
	id.Name = firstNonEmpty(vi["ProductName"], vi["FileDescription"])
	id.Version = firstNonEmpty(vi["ProductVersion"], vi["FileVersion"])
	id.Publisher = vi["CompanyName"]
	return id, nil
}

// openPE memory-maps a named file (its own handle: pe.File.Close closes it)
// and reads anything else into memory up to MaxPEBytes.
func openPE(ra io.ReaderAt, size int64, lim Limits) (*pe.File, error) {
	if osf, ok := ra.(*os.File); ok {
		if f, err := pe.New(osf.Name(), peOptions()); err == nil {
			return f, nil
		}
	}
	if size > lim.MaxPEBytes {
		return nil, fail(ReasonPackageTooLarge, FormatPE, nil, "%d bytes, more than %d", size, lim.MaxPEBytes)
	}
	buf := make([]byte, size)
	if _, err := ra.ReadAt(buf, 0); err != nil && err != io.EOF {
		return nil, fail(ReasonPackageUnreadable, FormatPE, err, "reading the file")
	}
	f, err := pe.NewBytes(buf, peOptions())
	if err != nil {
		return nil, fail(ReasonPackageUnreadable, FormatPE, err, "opening the PE image")
	}
	return f, nil
}
