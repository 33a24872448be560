// swift-tools-version:5.9
// The xpromo in-app SDK for Swift apps on macOS: a thin Swift layer
// (Sources/XPromo) over the C ABI (xpromo.h), whose static library
// XPromoC.xcframework is built on a Mac by build-xcframework.sh.
// docs/capi.md ("Swift") is the guide.
import PackageDescription

let package = Package(
    name: "XPromo",
    platforms: [.macOS(.v11)],
    products: [
        .library(name: "XPromo", targets: ["XPromo"]),
    ],
    targets: [
        // libxpromo.a (darwin arm64 + x86_64) with xpromo.h and its module map.
        .binaryTarget(name: "XPromoC", path: "XPromoC.xcframework"),
        .target(
            name: "XPromo",
            dependencies: ["XPromoC"],
            // What the Go runtime inside libxpromo.a links against.
            linkerSettings: [
                .linkedFramework("CoreFoundation"),
                .linkedFramework("Security"),
                .linkedLibrary("resolv"),
            ]
        ),
    ]
)
