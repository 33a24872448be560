// XPromo.cs: the C# binding of the xpromo in-app SDK's C ABI (xpromo.h),
// for WinForms, WPF and other .NET apps on Windows (xpromo.dll) and macOS
// (libxpromo.dylib). Copy this file into the app; it needs nothing but the
// base class library, and runs on .NET Framework 4.x, .NET 6+ and Mono.
// Structured values (the configuration, the ad, the install state) are
// JSON strings, as the C ABI has them: deserialize them with the app's JSON
// library (System.Text.Json on .NET). docs/capi.md is the guide.
//
// Thread safety: an Agent may be used from any thread, concurrently. Calls
// that talk to the server block: make them off the UI thread. The render
// callback runs on the thread that called Show; the log callback on any
// thread.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;

namespace XPromo
{
    /// <summary>The status codes of xpromo.h.</summary>
    public enum Status
    {
        Ok = 0,
        NoFill = 1,
        InvalidArgument = -1,
        BadHandle = -2,
        Server = -3,
        Network = -4,
        OfferExpired = -5,
        NoChain = -6,
        DataDirInUse = -7,
        QueueFull = -8,
        Render = -9,
        Failed = -10,
        Internal = -99,
    }

    /// <summary>What became of a rendered ad.</summary>
    public enum Outcome
    {
        NotShown = 0,
        Dismissed = 1,
        Clicked = 2,
    }

    /// <summary>A failed call: Status, the stable Code (the server's code
    /// for Status.Server), the HTTP status of the server's answer (else 0).</summary>
    public sealed class XPromoException : Exception
    {
        public Status Status { get; }
        public string Code { get; }
        public int HttpStatus { get; }

        public XPromoException(Status status, string code, int httpStatus, string message) : base(message)
        {
            Status = status;
            Code = code;
            HttpStatus = httpStatus;
        }
    }

    /// <summary>The P/Invoke declarations of xpromo.h. "xpromo" resolves to
    /// xpromo.dll on Windows, libxpromo.dylib on macOS, libxpromo.so on
    /// Linux.</summary>
    internal static class Native
    {
        private const string Lib = "xpromo";

        [StructLayout(LayoutKind.Sequential)]
        internal struct Error
        {
            public int Status;
            public int HttpStatus;
            public IntPtr Code;
            public IntPtr Message;
        }

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate void LogFn(IntPtr userData, int level, IntPtr message);

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate long ClockFn(IntPtr userData);

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        internal delegate int RenderFn(IntPtr userData, IntPtr adJson);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern IntPtr xpromo_version();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void xpromo_string_free(IntPtr s);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern void xpromo_error_free(IntPtr err);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int xpromo_agent_new(byte[] configJson, out ulong agent, out IntPtr err);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int xpromo_agent_free(ulong agent, out IntPtr err);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int xpromo_set_logger(ulong agent, LogFn fn, IntPtr userData, int minLevel, out IntPtr err);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int xpromo_set_clock(ulong agent, ClockFn fn, IntPtr userData, out IntPtr err);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int xpromo_agent_start(ulong agent, out IntPtr err);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int xpromo_device_id(ulong agent, out IntPtr id, out IntPtr err);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int xpromo_fill(ulong agent, byte[] slot, out ulong placement, out IntPtr adJson, out IntPtr err);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int xpromo_placement_click(ulong placement, out IntPtr downloadUrl, out IntPtr err);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int xpromo_placement_free(ulong placement, out IntPtr err);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int xpromo_show(ulong agent, byte[] slot, RenderFn render, IntPtr userData, out IntPtr resultJson, out IntPtr err);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int xpromo_claim_install(ulong agent, out IntPtr stateJson, out IntPtr err);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int xpromo_install_state(ulong agent, out IntPtr stateJson, out IntPtr err);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int xpromo_heartbeat(ulong agent, out IntPtr err);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int xpromo_flush(ulong agent, out IntPtr err);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        internal static extern int xpromo_queue_length(ulong agent, out long n, out IntPtr err);

        /// <summary>A NUL-terminated UTF-8 copy of s.</summary>
        internal static byte[] Utf8(string s)
        {
            if (s == null) return null;
            var b = Encoding.UTF8.GetBytes(s);
            Array.Resize(ref b, b.Length + 1);
            return b;
        }

        /// <summary>The UTF-8 string at p (valid during a callback).</summary>
        internal static string Read(IntPtr p)
        {
            if (p == IntPtr.Zero) return null;
            int n = 0;
            while (Marshal.ReadByte(p, n) != 0) n++;
            var b = new byte[n];
            Marshal.Copy(p, b, 0, n);
            return Encoding.UTF8.GetString(b);
        }

        /// <summary>The string at p, which the library returned: read, then freed.</summary>
        internal static string Take(IntPtr p)
        {
            try { return Read(p); }
            finally { xpromo_string_free(p); }
        }

        /// <summary>Throws the error of a failed call (and frees it).</summary>
        internal static void Check(int status, IntPtr err)
        {
            if (status == (int)Status.Ok) return;
            throw Exception(status, err);
        }

        internal static XPromoException Exception(int status, IntPtr err)
        {
            if (err == IntPtr.Zero)
                return new XPromoException((Status)status, "", 0, "xpromo: status " + status);
            try
            {
                var e = (Error)Marshal.PtrToStructure(err, typeof(Error));
                return new XPromoException((Status)e.Status, Read(e.Code), e.HttpStatus, Read(e.Message));
            }
            finally { xpromo_error_free(err); }
        }
    }

    /// <summary>A filled slot: the ad to render (Ad, JSON) and the offer
    /// signed if the user clicks before it lapses.</summary>
    public sealed class Placement : IDisposable
    {
        private ulong handle;

        /// <summary>The ad: {"slot","title","icon_url","description","cta",
        /// "sponsored_label","advertiser_app_id","expires_at"}. Render the
        /// sponsored_label visibly; stop showing the ad at expires_at.</summary>
        public string Ad { get; }

        internal Placement(ulong handle, string ad)
        {
            this.handle = handle;
            Ad = ad;
        }

        /// <summary>The user clicked: signs and reports the click, hands the
        /// token over, and returns the download URL to open in the browser.</summary>
        public string Click()
        {
            IntPtr url, err;
            Native.Check(Native.xpromo_placement_click(handle, out url, out err), err);
            return Native.Take(url);
        }

        public void Dispose()
        {
            if (handle == 0) return;
            IntPtr err;
            Native.xpromo_placement_free(handle, out err); // a placement of a freed agent is gone already
            Native.xpromo_error_free(err);
            handle = 0;
        }
    }

    /// <summary>The xpromo SDK of one app (xpromo_agent).</summary>
    public sealed class Agent : IDisposable
    {
        private ulong handle;
        // The delegates handed to the library, kept alive as long as it may
        // call them (a replaced one may still be running on another thread).
        private readonly List<Delegate> callbacks = new List<Delegate>();

        /// <summary>Opens the SDK with its JSON configuration (xpromo.h,
        /// xpromo_agent_new). No network I/O.</summary>
        public Agent(string configJson)
        {
            IntPtr err;
            Native.Check(Native.xpromo_agent_new(Native.Utf8(configJson), out handle, out err), err);
        }

        /// <summary>The library's version.</summary>
        public static string Version => Native.Read(Native.xpromo_version());

        /// <summary>Receives the SDK's log lines at or above minLevel (-4
        /// debug, 0 info, 4 warn, 8 error), from any thread; null stops.</summary>
        public void SetLogger(Action<int, string> log, int minLevel = 4)
        {
            IntPtr err;
            var fn = log == null ? null : new Native.LogFn((ud, level, msg) => log(level, Native.Read(msg)));
            if (fn != null) callbacks.Add(fn);
            Native.Check(Native.xpromo_set_logger(handle, fn, IntPtr.Zero, minLevel, out err), err);
        }

        /// <summary>Replaces the clock (unix milliseconds); null restores
        /// the system clock.</summary>
        public void SetClock(Func<long> now)
        {
            IntPtr err;
            var fn = now == null ? null : new Native.ClockFn(ud => now());
            if (fn != null) callbacks.Add(fn);
            Native.Check(Native.xpromo_set_clock(handle, fn, IntPtr.Zero, out err), err);
        }

        /// <summary>Starts the background delivery of queued events and the
        /// hourly heartbeats, until Dispose.</summary>
        public void Start()
        {
            IntPtr err;
            Native.Check(Native.xpromo_agent_start(handle, out err), err);
        }

        public string DeviceId
        {
            get
            {
                IntPtr id, err;
                Native.Check(Native.xpromo_device_id(handle, out id, out err), err);
                return Native.Take(id);
            }
        }

        /// <summary>Asks for an ad for slot (the fill is the impression);
        /// null when there is nothing to show.</summary>
        public Placement Fill(string slot)
        {
            ulong p;
            IntPtr ad, err;
            int status = Native.xpromo_fill(handle, Native.Utf8(slot), out p, out ad, out err);
            if (status == (int)Status.NoFill)
            {
                Native.xpromo_string_free(ad);
                Native.xpromo_error_free(err);
                return null;
            }
            Native.Check(status, err);
            return new Placement(p, Native.Take(ad));
        }

        /// <summary>Fills slot, calls render with the ad's JSON on this
        /// thread, and clicks when it answers Clicked. Returns the result's
        /// JSON ({"filled":false,...} when there was nothing to show).</summary>
        public string Show(string slot, Func<string, Outcome> render)
        {
            IntPtr result, err;
            Native.RenderFn fn = (ud, ad) => (int)render(Native.Read(ad));
            int status = Native.xpromo_show(handle, Native.Utf8(slot), fn, IntPtr.Zero, out result, out err);
            GC.KeepAlive(fn);
            if (status == (int)Status.NoFill)
            {
                Native.xpromo_error_free(err);
                return Native.Take(result);
            }
            Native.Check(status, err);
            return Native.Take(result);
        }

        /// <summary>At every launch: claims the install on the first one.
        /// Returns the install state's JSON.</summary>
        public string ClaimInstall()
        {
            IntPtr state, err;
            Native.Check(Native.xpromo_claim_install(handle, out state, out err), err);
            return Native.Take(state);
        }

        public string InstallState
        {
            get
            {
                IntPtr state, err;
                Native.Check(Native.xpromo_install_state(handle, out state, out err), err);
                return Native.Take(state);
            }
        }

        /// <summary>At launch, then hourly. False when there is no chain to
        /// send heartbeats for.</summary>
        public bool Heartbeat()
        {
            IntPtr err;
            int status = Native.xpromo_heartbeat(handle, out err);
            if (status == (int)Status.NoChain)
            {
                Native.xpromo_error_free(err);
                return false;
            }
            Native.Check(status, err);
            return true;
        }

        /// <summary>Delivers the queued events now; throws XPromoException
        /// with Status.Network when the server cannot be reached (they stay
        /// queued).</summary>
        public void Flush()
        {
            IntPtr err;
            Native.Check(Native.xpromo_flush(handle, out err), err);
        }

        public long QueueLength
        {
            get
            {
                long n;
                IntPtr err;
                Native.Check(Native.xpromo_queue_length(handle, out n, out err), err);
                return n;
            }
        }

        public void Dispose()
        {
            if (handle == 0) return;
            IntPtr err;
            int status = Native.xpromo_agent_free(handle, out err);
            handle = 0;
            Native.Check(status, err);
            GC.KeepAlive(callbacks);
        }
    }
}
