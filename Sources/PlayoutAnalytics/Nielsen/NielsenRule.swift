/// The rules of Nielsen's DCR app SDK integration guide that ``NielsenAppSDK``'s conformance
/// mode checks; a broken one becomes a ``ConformanceFinding`` naming it, and the session goes on.
public enum NielsenRule: String, Sendable, Hashable, CaseIterable {
    /// The instance is initialized with an `appid`: `P` (production) or `T` (test) followed by
    /// a GUID (`PXXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX`). Without a valid one the instance is
    /// disabled and every later call is ignored.
    case appId
    /// `play` opens a viewing session; `loadMetadata`, `playheadPosition`, `stop` and `end`
    /// belong inside one (after `end`, `play` again). `play` is not repeated while a session is
    /// open.
    case sessionOrder
    /// `loadMetadata` comes before the first `playheadPosition` of each asset (and again after
    /// `end`): the SDK cannot credit a playhead to no asset.
    case metadataBeforePlayhead
    /// Every metadata value is a string (`"length": "3600"`, not `3600`).
    case stringValues
    /// Metadata keys are case-sensitive: the reserved names are spelled exactly (`assetid`,
    /// not `assetId`; `segB`, not `segb`).
    case caseSensitiveKeys
    /// Each content type has its required keys: content needs `type`, `assetid`, `program`,
    /// `title`, `length`, `airdate`, `isfullepisode` and `adloadtype`; an ad (`preroll`,
    /// `midroll`, `postroll`, `ad`) needs `type` and `assetid`; static needs `type` and
    /// `section`; `play`'s channel info needs `channelName`.
    case requiredKeys
    /// Values keep to the guide's limits: `program` at most 25 characters, `title` at most 40,
    /// any other value at most 511 (the request must stay under 2,000); keys at most 64
    /// characters and at most 100 keys (Playout's bounds on hostile input).
    case lengthLimits
    /// Values keep to the guide's formats: `type` is `content`, `preroll`, `midroll`,
    /// `postroll`, `ad` or `static`; `length` is seconds (integer or decimal, ≥ 0; 86400 for a
    /// continuous stream, 0 when unknown); `airdate` is `YYYY-MM-DDThh:mm:ss` with `Z` or an
    /// offset, or `YYYYMMDD HH:MI:SS`; `isfullepisode` is `y` or `n`; `adloadtype` is `1`
    /// (linear) or `2` (dynamic); `assetid` has no special characters (letters, digits, `-`, `_`,
    /// `.`).
    case valueFormat
    /// The playhead is reported once a second while content plays — not more often (two
    /// reports less than half a second apart).
    case playheadOncePerSecond
    /// Live content reports the current Unix time in seconds (UTC, within 30 s of the device's
    /// clock); on-demand content reports its position in seconds from the start, between 0 and
    /// its `length`.
    case playheadUnits
    /// While buffering no playhead is reported, and after more than 30 s of continuous
    /// buffering `stop` is called: a playhead more than 30 s after the previous one with no
    /// `stop` between breaks this.
    case stopAfterLongBuffering
    /// A disabled instance (`appDisableApi(true)`, or a failed initialization) ignores every
    /// call.
    case disabledInstance
}

/// A Nielsen conformance finding.
public typealias NielsenFinding = ConformanceFinding<NielsenRule>
