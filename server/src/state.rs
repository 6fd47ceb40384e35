//! The service's live state, built once by [`ChatService::new`](crate::ChatService::new) from a
//! [`Config`]: the host and stores it was handed, the catalogs (directories are opened and
//! watched here, not in the config builder), the event broadcaster, the approvals (policy and
//! "always allow" store), the MCP App view tokens, the turn cache and the runs. Routes see this and the settings; nothing here is a setting.
//!
//! With a shared engine ([`ConfigBuilder::shared_engine`](crate::ConfigBuilder::shared_engine),
//! Redis or PostgreSQL) the event broadcaster (unless the host handed one over) and the view
//! tokens live in it, so any instance serves them; the approval-id key is derived from the signing secret when one is
//! configured ([`ConfigBuilder::signing_secret`](crate::ConfigBuilder::signing_secret)), else
//! random per process.

use std::sync::Arc;

use lmchatkit_protocol::{Model, ServerEvent, ServerEventType};

use crate::access::approval::Approvals;
use crate::access::input::InputTickets;
use crate::aisdk::approval_id::ApprovalKey;
use crate::api::ApiError;
use crate::apps::origins::{Base, Sandboxes};
use crate::config::{Config, PresetSpec, Settings, StatusFn};
use crate::host::{Host, HostError, Principal, RequestContext};
use crate::limits::Streams;
use crate::live::events::EventBroadcaster;
use crate::live::runs::Runs;
use crate::live::views::{ViewTokens, Views};
use crate::models::Catalog;
use crate::presets::{CommandDir, CommandSource, OnChange, PersonaDir, PersonaSource};
use crate::store::HistoryStore;
use crate::turn::TurnCache;

/// Everything a request handler may use.
pub(crate) struct State {
    pub(crate) settings: Settings,
    pub(crate) host: Arc<dyn Host>,
    pub(crate) personas: Option<Arc<dyn PersonaSource>>,
    pub(crate) commands: Option<Arc<dyn CommandSource>>,
    pub(crate) history: Option<Arc<dyn HistoryStore>>,
    pub(crate) events: Option<EventBroadcaster>,
    pub(crate) mcp_status: Option<StatusFn>,
    /// Issued MCP App view tokens.
    pub(crate) views: Views,
    /// Proxy mode's sandbox origins (`None` in default mode).
    pub(crate) sandboxes: Option<Sandboxes>,
    pub(crate) turn_cache: TurnCache,
    /// Turns running as server tasks, and the logs their responses tail.
    pub(crate) runs: Runs,
    /// Open chat streams, per principal and in total.
    pub(crate) streams: Streams,
    /// Signs the approval ids of the AI SDK route.
    pub(crate) approval_key: ApprovalKey,
    /// Signs and checks the tickets of tools' requests for the user's input.
    pub(crate) input_tickets: crate::access::input::InputTickets,
    /// Facts about models beyond the host's list.
    pub(crate) catalog: Catalog,
    /// The approval policy and the per-principal "always allow" store.
    pub(crate) approvals: Arc<Approvals>,
    /// Each user's own MCP servers, when on.
    #[cfg(feature = "mcp")]
    pub(crate) user_mcp: Option<crate::user_mcp::UserMcp>,
    /// The operator's sign-ins to their OAuth MCP servers, when on.
    #[cfg(feature = "mcp")]
    pub(crate) mcp_oauth: Option<crate::mcp::OperatorOAuth>,
}

impl State {
    /// Builds the live state: opens (and starts watching) catalog directories, whose reloads
    /// are announced on the broadcaster this state ends up with.
    pub(crate) fn new(config: Config) -> Self {
        let Config { settings, parts } = config;
        #[cfg(shared_engine)]
        let shared = parts.shared.clone();
        let events = settings.events.then(|| {
            parts.event_broadcaster.unwrap_or_else(|| {
                // Through the shared engine when there is one, so every instance's tabs hear it.
                #[cfg(shared_engine)]
                if let Some(engine) = &shared {
                    return EventBroadcaster::over_engine(engine.clone());
                }
                EventBroadcaster::default()
            })
        });
        #[cfg(shared_engine)]
        if shared.is_some() && events.as_ref().is_some_and(|e| !e.is_shared()) {
            tracing::warn!(
                "the service shares an engine, but its event broadcaster is in-process: saves \
                 through other instances will not reach this one's tabs (build it with \
                 EventBroadcaster::over_engine)"
            );
        }
        #[cfg_attr(not(shared_engine), allow(unused_mut))]
        let mut views = Views::Local(ViewTokens::new(settings.app_view_ttl));
        // A view URL loads from any instance: the tokens live in the shared engine.
        #[cfg(shared_engine)]
        if let Some(engine) = &shared {
            use crate::live::SharedEngine;
            views = match engine.clone() {
                #[cfg(feature = "redis")]
                SharedEngine::Redis(r) => Views::Shared(
                    crate::live::views::redis::SharedViews::new(r, settings.app_view_ttl),
                ),
                #[cfg(feature = "postgres")]
                SharedEngine::Postgres(p) => Views::Postgres(
                    crate::live::views::postgres::PostgresViews::new(p, settings.app_view_ttl),
                ),
            };
        }
        let personas = parts.personas.map(|spec| match spec {
            PresetSpec::Source(s) => s,
            PresetSpec::Dir(dir) => {
                let on_change = change_notifier(events.clone(), ServerEventType::PersonasChanged);
                Arc::new(PersonaDir::open(dir, on_change)) as Arc<dyn PersonaSource>
            }
        });
        let commands = parts.commands.map(|spec| match spec {
            PresetSpec::Source(s) => s,
            PresetSpec::Dir(dir) => {
                let on_change = change_notifier(events.clone(), ServerEventType::CommandsChanged);
                Arc::new(CommandDir::open(dir, on_change)) as Arc<dyn CommandSource>
            }
        });
        let sandboxes = settings
            .sandbox_origin
            .as_deref()
            .and_then(Base::parse)
            .map(Sandboxes::new);
        #[cfg_attr(not(feature = "mcp"), allow(unused_mut))]
        let mut approvals = Approvals::new(parts.approval_policy, parts.approval_store);
        #[cfg_attr(not(feature = "mcp"), allow(unused_mut))]
        let mut host = parts.host;
        // Each user's own tools join the host's (listed from the store, called per call).
        #[cfg(feature = "mcp")]
        if let Some(um) = &parts.user_mcp {
            host = Arc::new(crate::user_mcp::UserToolsHost::new(host, um.clone()));
            approvals.own_tools = Some(Arc::new(um.clone()));
        }
        let approvals = Arc::new(approvals);
        let history = parts.history;
        #[cfg(shared_engine)]
        let on_reaped = history.clone().map(mark_lost_replies);
        let input_tickets = match parts.signing_secret.as_ref() {
            Some(s) => InputTickets::derive(&s.0, settings.input_ttl),
            None => InputTickets::random(settings.input_ttl),
        };
        Self {
            approvals,
            views,
            streams: Streams::new(settings.streams),
            sandboxes,
            settings,
            host,
            personas,
            commands,
            history,
            events,
            mcp_status: parts.mcp_status,
            turn_cache: TurnCache::default(),
            #[cfg(shared_engine)]
            runs: Runs::new(shared, on_reaped),
            #[cfg(not(shared_engine))]
            runs: Runs::default(),
            approval_key: parts
                .signing_secret
                .as_ref()
                .map_or_else(ApprovalKey::random, |s| ApprovalKey::derive(&s.0)),
            input_tickets,
            catalog: parts.catalog.unwrap_or_else(Catalog::builtin),
            #[cfg(feature = "mcp")]
            user_mcp: parts.user_mcp,
            #[cfg(feature = "mcp")]
            mcp_oauth: parts.mcp_oauth,
        }
    }
}

impl State {
    /// What preparing a turn reads ([`crate::turn::prepare`]).
    pub(crate) fn turn_inputs(&self) -> crate::turn::Inputs<'_> {
        crate::turn::Inputs {
            host: &*self.host,
            personas: self.personas.as_deref(),
            cache: &self.turn_cache,
            system_prompt: &self.settings.system_prompt,
            catalog: &self.catalog,
        }
    }

    /// The server-side agent loop, deciding calls by the approval policy.
    pub(crate) fn agent(&self) -> crate::agent::Agent {
        crate::agent::Agent {
            host: self.host.clone(),
            decide: self.approvals.clone(),
            max_steps: self.settings.max_steps,
            tickets: self.input_tickets.clone(),
        }
    }

    /// The caller's model menu ([`crate::turn::menu::models`]).
    pub(crate) async fn models(&self, cx: &RequestContext) -> Result<Vec<Model>, HostError> {
        crate::turn::menu::models(&self.turn_inputs(), cx).await
    }

    /// What a turn uses of the service, either protocol's ([`crate::turn::Services`]).
    pub(crate) fn turn(&self) -> crate::turn::Services<'_> {
        crate::turn::Services {
            inputs: self.turn_inputs(),
            approvals: &self.approvals,
            history: self.history.as_ref(),
            events: self.events.as_ref(),
            runs: &self.runs,
        }
    }

    /// What an AI SDK turn uses of the service ([`crate::aisdk::chat::plan`] and `run`).
    pub(crate) fn aisdk(&self) -> crate::aisdk::chat::Services<'_> {
        crate::aisdk::chat::Services {
            turn: self.turn(),
            approval_key: &self.approval_key,
            input_tickets: &self.input_tickets,
        }
    }

    /// The history store, or 404 when server-side history is off.
    pub(crate) fn history_store(&self) -> Result<&Arc<dyn HistoryStore>, ApiError> {
        self.history
            .as_ref()
            .ok_or_else(|| ApiError::NotFound("server-side history is not enabled".into()))
    }

    /// Tells `principal`'s other tabs that conversation `id` changed (nothing when events are
    /// off).
    pub(crate) fn notify_conversation(
        &self,
        principal: &Principal,
        kind: ServerEventType,
        id: &str,
        revision: Option<u64>,
    ) {
        if let Some(events) = &self.events {
            events.conversation(principal, kind, id, revision);
        }
    }
}

/// A reload callback that broadcasts `kind` (nothing when events are off).
fn change_notifier(events: Option<EventBroadcaster>, kind: ServerEventType) -> Option<OnChange> {
    let events = events?;
    Some(Arc::new(move || events.broadcast(ServerEvent::new(kind))))
}

/// What a run found running without its instance does to its saved reply: marked failed, in
/// the background (the read that found it goes on).
#[cfg(shared_engine)]
fn mark_lost_replies(store: Arc<dyn HistoryStore>) -> crate::live::runs::OnReaped {
    Arc::new(move |r: crate::live::runs::Reaped| {
        let store = store.clone();
        tokio::spawn(async move {
            let principal = crate::host::Principal::new(r.owner.as_str());
            let saved = crate::live::runs::saver::mark_lost(
                store.as_ref(),
                &principal,
                &r.thread,
                &r.message_id,
            )
            .await;
            if let Err(e) = saved {
                tracing::warn!(thread = %r.thread, error = %e, "marking a lost run's reply failed");
            }
        });
    })
}
