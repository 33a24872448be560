// XPromo: the xpromo in-app SDK for Swift, a thin layer over the C ABI
// (xpromo.h, module XPromoC): handles become classes that free themselves,
// statuses become a thrown XPromoError, JSON values become Decodable
// structs. Everything else (signing, the offline queue, the handoff) is
// the Go SDK inside libxpromo.a. docs/capi.md is the guide.
//
// Thread safety: an Agent may be used from any thread. Calls that talk to
// the server block: make them off the main thread. show's render closure
// runs on the calling thread; the logger on any thread.
import Foundation
import XPromoC

/// A failed call: the C ABI's status, its stable code (the server's code
/// for .server), the HTTP status of the server's answer (else 0).
public struct XPromoError: Error, CustomStringConvertible {
    public enum Status: Int32 {
        case noFill = 1, invalidArgument = -1, badHandle = -2, server = -3, network = -4
        case offerExpired = -5, noChain = -6, dataDirInUse = -7, queueFull = -8
        case render = -9, failed = -10, internalError = -99, unknown = -1000
    }
    public let status: Status
    public let code: String
    public let httpStatus: Int
    public let message: String
    public var description: String { "\(code): \(message)" }
}

/// The lifecycle slots.
public enum Slot: String {
    case onboardingComplete = "onboarding_complete"
    case updateInstalled = "update_installed"
    case aboutWindow = "about_window"
    case settingsIdle = "settings_idle"
    case beforeQuit = "before_quit"
}

/// What became of a rendered ad.
public enum Outcome: Int32 {
    case notShown = 0, dismissed = 1, clicked = 2
}

/// xpromo_agent_new's configuration (xpromo.h documents each member).
public struct Configuration: Encodable {
    public var baseURL: String
    public var appID: String
    public var sdkKeyPEM: String
    public var dataDir: String
    public var platform: String?
    public var locale: String?
    public var inboxDir: String?
    public var downloadDirs: [String]?
    public var installedPath: String?
    public var heartbeatEveryMS: Int64?
    public var sendTimeoutMS: Int64?

    public init(baseURL: String, appID: String, sdkKeyPEM: String, dataDir: String) {
        self.baseURL = baseURL
        self.appID = appID
        self.sdkKeyPEM = sdkKeyPEM
        self.dataDir = dataDir
    }

    enum CodingKeys: String, CodingKey {
        case baseURL = "base_url", appID = "app_id", sdkKeyPEM = "sdk_key_pem", dataDir = "data_dir"
        case platform, locale, inboxDir = "inbox_dir", downloadDirs = "download_dirs"
        case installedPath = "installed_path", heartbeatEveryMS = "heartbeat_every_ms", sendTimeoutMS = "send_timeout_ms"
    }
}

/// An ad to render in the app's own template. The sponsoredLabel must be
/// visible; stop showing the ad at expiresAt.
public struct Ad: Decodable {
    public let slot, title, iconURL, description, cta, sponsoredLabel, advertiserAppID: String
    public let expiresAt: Date
    enum CodingKeys: String, CodingKey {
        case slot, title, iconURL = "icon_url", description, cta, sponsoredLabel = "sponsored_label"
        case advertiserAppID = "advertiser_app_id", expiresAt = "expires_at"
    }
}

/// xpromo_show's answer.
public struct ShowResult: Decodable {
    public let filled: Bool
    public let outcome: String?
    public let ad: Ad?
    public let downloadURL: String?
    public let noFillReason: String?
    enum CodingKeys: String, CodingKey {
        case filled, outcome, ad, downloadURL = "download_url", noFillReason = "no_fill_reason"
    }
}

/// What the SDK knows about this install's attribution.
public struct InstallState: Decodable {
    public let claimed: Bool
    public let channel: String?
    public let answered: Bool
    public let chainID: String?
    public let state: String?
    public let refusal: String?
    public let heartbeatSeq: Int64
    enum CodingKeys: String, CodingKey {
        case claimed, channel, answered, chainID = "chain_id", state, refusal, heartbeatSeq = "heartbeat_seq"
    }
}

private func decode<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
    let d = JSONDecoder()
    d.dateDecodingStrategy = .custom { decoder in
        let s = try decoder.singleValueContainer().decode(String.self)
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = f.date(from: s) { return date }
        f.formatOptions = [.withInternetDateTime]
        if let date = f.date(from: s) { return date }
        throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not RFC 3339: \(s)"))
    }
    return try d.decode(type, from: Data(json.utf8))
}

/// Runs a C ABI call and turns its status and error into a throw.
private func call(_ body: (UnsafeMutablePointer<UnsafeMutablePointer<xpromo_error>?>) -> xpromo_status) throws {
    var err: UnsafeMutablePointer<xpromo_error>?
    let status = body(&err)
    defer { xpromo_error_free(err) }
    guard status != 0 else { return }
    throw XPromoError(
        status: XPromoError.Status(rawValue: status) ?? .unknown,
        code: err.map { String(cString: $0.pointee.code) } ?? "",
        httpStatus: Int(err?.pointee.http_status ?? 0),
        message: err.map { String(cString: $0.pointee.message) } ?? "xpromo: status \(status)")
}

/// Takes a string the library returned: copied, then freed.
private func take(_ p: UnsafeMutablePointer<CChar>?) -> String {
    defer { xpromo_string_free(p) }
    return p.map { String(cString: $0) } ?? ""
}

/// A filled slot. Freed with the object.
public final class Placement {
    private let handle: xpromo_placement
    public let ad: Ad

    init(handle: xpromo_placement, ad: Ad) {
        self.handle = handle
        self.ad = ad
    }
    deinit { xpromo_placement_free(handle, nil) }

    /// The user clicked: signs and reports the click, hands the token
    /// over; open the returned URL in the browser (NSWorkspace.shared.open).
    public func click() throws -> URL {
        var url: UnsafeMutablePointer<CChar>?
        try call { xpromo_placement_click(handle, &url, $0) }
        return URL(string: take(url))!
    }
}

/// The xpromo SDK of this app. Open one at launch; it is freed (its data
/// directory released) with the object.
public final class Agent {
    private let handle: xpromo_agent
    // Boxes handed to the library as user data, kept until deinit (a
    // replaced logger may still be running on another thread).
    private var retained: [Unmanaged<LogBox>] = []
    private let lock = NSLock()

    public init(_ configuration: Configuration) throws {
        let json = String(decoding: try JSONEncoder().encode(configuration), as: UTF8.self)
        var h: xpromo_agent = 0
        try call { xpromo_agent_new(json, &h, $0) }
        handle = h
    }

    deinit {
        xpromo_agent_free(handle, nil)
        retained.forEach { $0.release() }
    }

    /// Starts the background delivery of queued events and the hourly
    /// heartbeats.
    public func start() throws { try call { xpromo_agent_start(handle, $0) } }

    /// Receives the SDK's log lines at or above minLevel (-4 debug, 0 info,
    /// 4 warn, 8 error), on any thread.
    public func setLogger(minLevel: Int32 = 4, _ log: @escaping (Int32, String) -> Void) throws {
        let box = Unmanaged.passRetained(LogBox(log))
        lock.lock()
        retained.append(box)
        lock.unlock()
        try call {
            xpromo_set_logger(handle, { userData, level, message in
                guard let userData, let message else { return }
                Unmanaged<LogBox>.fromOpaque(userData).takeUnretainedValue().log(level, String(cString: message))
            }, box.toOpaque(), minLevel, $0)
        }
    }

    public func deviceID() throws -> String {
        var id: UnsafeMutablePointer<CChar>?
        try call { xpromo_device_id(handle, &id, $0) }
        return take(id)
    }

    /// Asks for an ad for slot (the fill is the impression: ask only when
    /// the slot is about to be shown); nil when there is nothing to show.
    public func fill(_ slot: Slot) throws -> Placement? {
        var p: xpromo_placement = 0
        var ad: UnsafeMutablePointer<CChar>?
        do {
            try call { xpromo_fill(handle, slot.rawValue, &p, &ad, $0) }
        } catch let e as XPromoError where e.status == .noFill {
            xpromo_string_free(ad)
            return nil
        }
        return Placement(handle: p, ad: try decode(Ad.self, take(ad)))
    }

    /// Fills slot, calls render on this thread, and clicks when it answers
    /// .clicked. A no-fill answers filled false.
    public func show(_ slot: Slot, render: (Ad) -> Outcome) throws -> ShowResult {
        var result: UnsafeMutablePointer<CChar>?
        try withoutActuallyEscaping(render) { render in
            var box = RenderBox(render: render)
            do {
                try call { err in
                    withUnsafeMutablePointer(to: &box) { boxp in
                        xpromo_show(handle, slot.rawValue, { userData, adJSON in
                            guard let userData, let adJSON,
                                  let ad = try? decode(Ad.self, String(cString: adJSON)) else { return -1 }
                            return userData.assumingMemoryBound(to: RenderBox.self).pointee.render(ad).rawValue
                        }, boxp, &result, err)
                    }
                }
            } catch let e as XPromoError where e.status == .noFill {}
        }
        return try decode(ShowResult.self, take(result))
    }

    /// At every launch: claims the install on the first one.
    public func claimInstall() throws -> InstallState {
        var s: UnsafeMutablePointer<CChar>?
        try call { xpromo_claim_install(handle, &s, $0) }
        return try decode(InstallState.self, take(s))
    }

    public func installState() throws -> InstallState {
        var s: UnsafeMutablePointer<CChar>?
        try call { xpromo_install_state(handle, &s, $0) }
        return try decode(InstallState.self, take(s))
    }

    /// At launch, then hourly (start() does it too). False when this
    /// install has no chain to send heartbeats for.
    @discardableResult
    public func heartbeat() throws -> Bool {
        do {
            try call { xpromo_heartbeat(handle, $0) }
            return true
        } catch let e as XPromoError where e.status == .noChain {
            return false
        }
    }

    /// Delivers the queued events now; throws .network when the server
    /// cannot be reached (they stay queued).
    public func flush() throws { try call { xpromo_flush(handle, $0) } }

    public func queueLength() throws -> Int64 {
        var n: Int64 = 0
        try call { xpromo_queue_length(handle, &n, $0) }
        return n
    }
}

private final class LogBox {
    let log: (Int32, String) -> Void
    init(_ log: @escaping (Int32, String) -> Void) { self.log = log }
}

private struct RenderBox {
    let render: (Ad) -> Outcome
}
