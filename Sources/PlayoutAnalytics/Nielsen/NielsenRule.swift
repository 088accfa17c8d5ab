/// The rules of Nielsen's DCR app SDK integration guide that ``NielsenAppSDK``'s conformance
/// mode checks; a broken one becomes a ``ConformanceFinding`` naming it, and the session goes on.
public enum NielsenRule: String, Sendable, Hashable, CaseIterable {
    /// The instance is initialized with an `appid`: `P` (production) or `T` (test) followed by
    /// a GUID (`PXXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX`). Without a valid one the instance is
    /// disabled and every later call is ignored.
    case appId
    /// `play` opens a viewing session; `loadMetadata`, `playheadPosition`, `stop` and `end`
    /// belong inside one (after `end`, `play` again). `play` is not repeated while a session is
    /// open. Two exceptions the guide shows: static metadata may be loaded at app start, before
    /// any `play` ("Sample API Sequence"), and a postroll's `loadMetadata`, playheads and `stop`
    /// follow the content's `end` ("Use Case 2").
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
    /// offset, or one of the guide's other eight formats (``NielsenMetadata/airdateFormats``);
    /// `isfullepisode` is `y` or `n` (also `Yes`/`No`, `lf`/`sf`); `adloadtype` is `1` (linear)
    /// or `2` (dynamic); `assetid` has no special characters (letters, digits, `-`, `_`, `.`);
    /// `title` names season and episode (`S01E03`, `S1E3`, `S1 E3`); `crossId1` is a Gracenote
    /// TMS id (`EP009311820061`).
    case valueFormat
    /// At most 25 distinct `section` values, and at most 25 distinct values across `segA`,
    /// `segB` and `segC`, per instance ("Aggregation Limits").
    case aggregationLimits
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
    /// The final playhead of the asset being played is sent before `end` or the next
    /// `loadMetadata`: such a call more than 1.5 s after the last playhead (and less than the
    /// 30 s a buffering may last, when playheads are rightly withheld) missed it. `stop` is not
    /// checked: it may end a buffering of any length, during which the guide withholds playheads.
    case finalPlayhead
    /// Each ad's playhead begins from 0 at the ad's start.
    case adPlayheadFromZero
    /// Content resumed after an ad continues from where its previous segment left off (its
    /// first playhead is the last content position or one second on), on demand.
    case contentResumesPosition
    /// After `stop`, playback resumes with `loadMetadata` and then playheads: a playhead
    /// straight after `stop` breaks this.
    case resumeWithMetadata
    /// `userOptOut` takes the URL the opt-out page navigated to: `nielsenappsdk://1` (opt out)
    /// or `nielsenappsdk://0` (opt in). Anything else is refused.
    case optOutURL
    /// A disabled instance (`appDisableApi(true)`, or a failed initialization) ignores every
    /// call.
    case disabledInstance
}

extension NielsenRule {
    /// The section of the guide (DCR video iOS App SDK) that states the rule; every finding's
    /// detail ends with it.
    public var guideSection: String {
        switch self {
        case .appId: "SDK Initialization"
        case .sessionOrder: "Configure API Calls: Sample API Sequence"
        case .metadataBeforePlayhead: "SDK Events"
        case .stringValues, .caseSensitiveKeys: "Configure Metadata"
        case .requiredKeys, .lengthLimits, .valueFormat: "Create Content Metadata"
        case .aggregationLimits: "Configure Static Metadata if Applicable: Aggregation Limits"
        case .playheadOncePerSecond, .playheadUnits: "Life cycle of SDK instance: playheadPosition"
        case .stopAfterLongBuffering: "Interruptions during playback"
        case .finalPlayhead: "SDK Events (note: the final playhead position)"
        case .adPlayheadFromZero, .contentResumesPosition: "API Call Sequence: Use Case 2"
        case .resumeWithMetadata: "Life cycle of SDK instance (interruptions: loadMetadata and playheadPosition)"
        case .optOutURL: "Global iOS SDK No Ad Framework Opt-out"
        case .disabledInstance: "Life cycle of SDK instance: Disabled state"
        }
    }
}

/// A Nielsen conformance finding.
public typealias NielsenFinding = ConformanceFinding<NielsenRule>
