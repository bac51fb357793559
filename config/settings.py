"""Django settings, read from the environment.

Defaults suit a laptop: a SQLite file, an embedded Celery transport (files under var/), no
server to install. Production sets DATABASE_URL, CELERY_BROKER_URL, SECRET_KEY and
ALLOWED_HOSTS; see docs/operations.md for every variable.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.env import envbool, envint, envlist, envsecret

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var"))

DEBUG = envbool("DEBUG", False)
# pytest sets PYTEST_VERSION for the whole session; a test run needs no real secret.
TESTING = "PYTEST_VERSION" in os.environ

SECRET_KEY = envsecret("SECRET_KEY")
if not SECRET_KEY:
    if not (DEBUG or TESTING):
        raise ImproperlyConfigured(
            "SECRET_KEY must be set when DEBUG is off (or SECRET_KEY_FILE naming a file). "
            "On a development machine, run commands as `python3.11 dev.py manage <command>`, "
            "which turns DEBUG on, or export DEBUG=1."
        )
    SECRET_KEY = "insecure-development-key-never-use-in-production"  # noqa: S105

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]" if DEBUG or TESTING else "")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS")
# The site's public address, from which links in emails are built (invitations, alerts).
# `dev.py run` sets it from HOST and PORT. Unset, an invitation's link is built from the
# address the inviting admin is using (its Host is one ALLOWED_HOSTS accepts), and an
# alert, sent by a worker with no request, links to http://127.0.0.1:8000.
SITE_URL = os.environ.get("SITE_URL", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "guardian",
    "django_celery_results",
    "django_celery_beat",  # schedules (scheduled runs), kept in the database
    "axes",
    "simple_history",
    "annotation",
    "evaluation",
    "audit",
    "accounts",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.SecurityHeadersMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "config.middleware.InputGuardMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    # Last, as django-axes asks: it turns a lockout raised during authentication into a page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            # {% partialdef %} everywhere without a {% load %}: htmx partials are the norm here.
            "builtins": ["template_partials.templatetags.partials"],
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "config.limits.context_processor",
                "config.context_processors.costs",
            ],
        },
    },
    {
        # Fragments a page repeats hundreds of times (config/jinja.py says why); no context
        # processors: a fragment gets what its view passes, and the request.
        "BACKEND": "django.template.backends.jinja2.Jinja2",
        "NAME": "jinja2",
        "DIRS": [BASE_DIR / "templates" / "jinja2"],
        "APP_DIRS": False,
        "OPTIONS": {"environment": "config.jinja.environment"},
    },
]

# --- Database -------------------------------------------------------------------------------
# PostgreSQL in production and CI (psycopg 3), a SQLite file by default.
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
        conn_max_age=envint("DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The verdicts' covering index (INCLUDE columns) is a PostgreSQL speed-up; SQLite builds
    # the index without them, which is all models.W040 says. Silenced for SQLite only, so
    # that `dev.py run` and `manage.py` print no warning a developer cannot act on.
    SILENCED_SYSTEM_CHECKS = ["models.W040"]
    # Web server and worker write concurrently: wait for the lock instead of failing at once,
    # and take it at BEGIN so that a read-then-write transaction cannot deadlock.
    DATABASES["default"]["OPTIONS"] = {"timeout": 20, "transaction_mode": "IMMEDIATE"}
    # The test database is a file, not memory, so that a worker process can share it.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-db.sqlite3")}
# Behind PgBouncer in transaction pooling (docs/operations.md, "Past one machine"): a
# server-side cursor does not outlive its transaction's server connection, and psycopg's
# automatic prepared statements would be sent to another one (PgBouncer < 1.21).
DATABASE_PGBOUNCER = envbool("DATABASE_PGBOUNCER", False)
if DATABASE_PGBOUNCER:
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = None
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Accounts and object permissions --------------------------------------------------------
AUTHENTICATION_BACKENDS = [
    # First: refuses a locked-out username or address before any password is checked.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
    "guardian.backends.ObjectPermissionBackend",
]
ANONYMOUS_USER_NAME = None  # guardian: no anonymous user row; anonymous visitors see nothing.
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# An invitation link (a dataset's members page) works once, for this many days after it
# was sent.
INVITATION_EXPIRY_DAYS = envint("INVITATION_EXPIRY_DAYS", 7)
if TESTING:
    # Hashing dominates login-heavy tests; the algorithm is irrelevant to what they check.
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# --- Single sign-on (OpenID Connect) -------------------------------------------------------
# Off unless OIDC_ENABLED: then the login page offers "Sign in with …" beside the password
# form, and people are matched to accounts by their verified email (accounts/sso.py,
# docs/operations.md#single-sign-on). mozilla-django-oidc reads the OIDC_RP_* and OIDC_OP_*
# names; the endpoints come from OIDC_ISSUER's discovery document unless set one by one.
OIDC_ENABLED = envbool("OIDC_ENABLED", False)
OIDC_ISSUER = os.environ.get("OIDC_ISSUER", "")
OIDC_RP_CLIENT_ID = os.environ.get("OIDC_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = envsecret("OIDC_CLIENT_SECRET", "") or ""
OIDC_LOGIN_LABEL = os.environ.get("OIDC_LOGIN_LABEL", "Sign in with single sign-on")
# Empty: any address the provider vouches for; else only these domains ("example.com").
OIDC_ALLOWED_EMAIL_DOMAINS = [d.lower().lstrip("@") for d in envlist("OIDC_ALLOWED_EMAIL_DOMAINS")]
# Some providers (Microsoft Entra ID) send no email_verified claim: turn this off only for
# a provider whose addresses are all its own, or anyone could claim an admin's address.
OIDC_REQUIRE_VERIFIED_EMAIL = envbool("OIDC_REQUIRE_VERIFIED_EMAIL", True)
OIDC_OP_AUTHORIZATION_ENDPOINT = os.environ.get("OIDC_AUTHORIZATION_ENDPOINT") or None
OIDC_OP_TOKEN_ENDPOINT = os.environ.get("OIDC_TOKEN_ENDPOINT") or None
OIDC_OP_USER_ENDPOINT = os.environ.get("OIDC_USERINFO_ENDPOINT") or None
OIDC_OP_JWKS_ENDPOINT = os.environ.get("OIDC_JWKS_ENDPOINT") or None
OIDC_RP_SIGN_ALGO = "RS256"
OIDC_RP_SCOPES = "openid email profile"
OIDC_USE_PKCE = True
OIDC_TIMEOUT = envint("OIDC_TIMEOUT", 10)  # seconds for each request to the provider
OIDC_AUTHENTICATION_CALLBACK_URL = "oidc-callback"
if OIDC_ENABLED:
    if not (OIDC_ISSUER and OIDC_RP_CLIENT_ID and OIDC_RP_CLIENT_SECRET):
        raise ImproperlyConfigured(
            "OIDC_ENABLED needs OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET "
            "(or OIDC_CLIENT_SECRET_FILE); see docs/operations.md#single-sign-on."
        )
    # Before guardian's: it answers the sign-in callback only, and nothing else.
    AUTHENTICATION_BACKENDS.insert(-1, "accounts.sso.SsoBackend")

# --- Internationalisation -------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

# --- Static files ---------------------------------------------------------------------------
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "static"))
WHITENOISE_USE_FINDERS = DEBUG or TESTING  # serve from static/ directly, no collectstatic
if DEBUG or TESTING:
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns about a missing root
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG or TESTING
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# --- Security -------------------------------------------------------------------------------
# Secure by default whenever DEBUG is off; each can be relaxed behind a TLS-terminating proxy.
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", not DEBUG and not TESTING)
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", not DEBUG and not TESTING)
CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", not DEBUG and not TESTING)
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0 if DEBUG or TESTING else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", not DEBUG)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy (django-csp 4): scripts and styles only from our own static files,
# so a stored <script> or an injected on*= handler never runs; style attributes stay allowed
# (charts shade cells with them) but no <style> element. htmx runs without eval: the pages
# use no hx-on and no js: values (templates/base.html turns off its inline indicator styles).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}
# Powerful browser features this application never uses, switched off for every page.
PERMISSIONS_POLICY = (
    "accelerometer=(), autoplay=(), camera=(), display-capture=(), geolocation=(), "
    "gyroscope=(), magnetometer=(), microphone=(), midi=(), payment=(), usb=(), "
    "interest-cohort=()"
)
if envbool("TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_HTTPONLY = True
# Health probes come from load balancers over plain HTTP inside the network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^livez$"]

# --- Login throttling (django-axes) ---------------------------------------------------------
# After AXES_FAILURE_LIMIT wrong passwords for one username from one address, that pair is
# locked out for AXES_COOLOFF_MINUTES (the right password is refused too, with a 429 page);
# a success resets the count. Admins unlock early with `manage.py axes_reset_username NAME`.
AXES_ENABLED = envbool("AXES_ENABLED", True)
AXES_FAILURE_LIMIT = envint("AXES_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = dt.timedelta(minutes=envint("AXES_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False
if envbool("TRUST_X_FORWARDED_PROTO", False):
    # Behind a proxy the client's address is the last one the proxy added to
    # X-Forwarded-For, not REMOTE_ADDR (the proxy itself).
    AXES_CLIENT_IP_CALLABLE = "config.middleware.forwarded_client_ip"

# --- Input limits and health ----------------------------------------------------------------
IMPORT_MAX_BYTES = envint("IMPORT_MAX_BYTES", 20 * 1024 * 1024)  # config/limits.py
# /healthz shows its checks only to staff or to a request carrying this token
# (Authorization: Bearer …); everyone else gets the status alone. Empty: staff only.
HEALTHZ_TOKEN = envsecret("HEALTHZ_TOKEN", "") or ""
HEALTHZ_CACHE_SECONDS = float(os.environ.get("HEALTHZ_CACHE_SECONDS", "5"))

# --- Email ----------------------------------------------------------------------------------
# With DEBUG (`dev.py run`), every email is written as a file to var/emails/ (one file per
# batch sent, named by time), not to the console, where it would sit among the worker's
# output: an invitation's link is found with `ls -t var/emails/ | head -1`.
EMAIL_BACKEND = os.environ.get(
    "EMAIL_BACKEND",
    "django.core.mail.backends.filebased.EmailBackend"
    if DEBUG
    else "django.core.mail.backends.smtp.EmailBackend",
)
EMAIL_FILE_PATH = Path(os.environ.get("EMAIL_FILE_PATH", VAR_DIR / "emails"))
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = envint("EMAIL_PORT", 587)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = envsecret("EMAIL_HOST_PASSWORD", "") or ""
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", True)
# Seconds to wait for the SMTP server: invitations are sent while the admin's request waits,
# and a mail server that never answers must not hold it (nor a worker's alert task) forever.
EMAIL_TIMEOUT = envint("EMAIL_TIMEOUT", 30)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "workbench@localhost")
SERVER_EMAIL = DEFAULT_FROM_EMAIL
ADMINS = [("Admin", addr) for addr in envlist("ADMIN_EMAILS")]

# --- Logging --------------------------------------------------------------------------------
LOG_LEVEL = os.environ.get("LOG_LEVEL", "INFO")
# A credential-like query parameter (`?token=…`) is redacted in every line written
# (config/logs.py): by the console handler, and in the development server's request log,
# Django's own logger and handler restated here with the filter on the logger.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "redact_secrets": {"()": "config.logs.RedactSecrets"},
        "one_line_refusals": {"()": "config.logs.OneLineRefusals"},
        "require_debug_false": {"()": "django.utils.log.RequireDebugFalse"},
    },
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "django.server": {
            "()": "django.utils.log.ServerFormatter",
            "format": "[{server_time}] {message}",
            "style": "{",
        },
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["one_line_refusals", "redact_secrets"],
        },
        "mail_admins": {
            "level": "ERROR",
            "filters": ["require_debug_false"],
            "class": "django.utils.log.AdminEmailHandler",
        },
        "django.server": {"class": "logging.StreamHandler", "formatter": "django.server"},
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.server": {
            "handlers": ["django.server"],
            "level": "INFO",
            "propagate": False,
            "filters": ["redact_secrets"],
        },
        # Django's own default gives the `django` logger a console handler of its own (with
        # DEBUG) besides the root's: every record of it was written twice, a 403's traceback
        # too. Here it keeps only its email to ADMINS on a server error and the root
        # handler writes each record once.
        "django": {"handlers": ["mail_admins"], "level": "INFO", "propagate": True},
        "django.db.backends": {"level": "INFO"},
        "celery": {"level": LOG_LEVEL},
        "axes": {"level": "WARNING"},  # it logs every login and logout at INFO
    },
}

# --- REST API -------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        # Personal API tokens (hashed, read-only or read-write) and the older DRF tokens,
        # both as `Authorization: Token <key>` (accounts/authentication.py).
        "accounts.authentication.ApiTokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": envint("API_PAGE_SIZE", 50),
    "DEFAULT_FILTER_BACKENDS": [
        "config.api_filters.IdFilterBackend",
        "rest_framework.filters.SearchFilter",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "config.renderers.BrowsableAPIRenderer",  # inline styles allowed on its pages alone
    ],
    # DRF's JSON parser, refusing deep nesting and NUL characters with a 400 (config/parsers.py)
    "DEFAULT_PARSER_CLASSES": [
        "config.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Checklist Workbench API",
    "DESCRIPTION": "Datasets, queries, checklists, judges, runs and verdicts.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI assets come from the sidecar package, served as our own static files (no CDN).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Several models have a "status" field with different choices: name each enum.
    "ENUM_NAME_OVERRIDES": {
        "QueryStatusEnum": "annotation.models.Query.Status",
        "ChecklistStatusEnum": "annotation.models.Checklist.Status",
        "CriterionKindEnum": "annotation.models.Criterion.Kind",
        "JudgeKindEnum": "evaluation.models.Judge.Kind",
        "RunStatusEnum": "evaluation.models.Run.Status",
        "RunKindEnum": "evaluation.models.Run.Kind",
        "RunScopeEnum": "evaluation.models.Run.Scope",
        "ApiTokenScopeEnum": "accounts.models.ApiToken.Scope",
        "VerdictOutcomeEnum": "evaluation.models.Verdict.Outcome",
        "GradedScoreOutcomeEnum": "evaluation.models.GradedScore.Outcome",
        "HumanLabelSourceEnum": "evaluation.models.HumanLabel.Source",
        "ReviewQueueEnum": "evaluation.models.ReviewAssignment.Queue",
        "ScoringEnum": "annotation.models.Scoring",
        "UndecidedEnum": "annotation.models.Undecided",
        # A run's verdict on a criterion (pass, fail or undecided): the rewards' criteria and
        # the side-by-side API's two sides share the choice set; and how the two sides compare.
        "PanelOutcomeEnum": "evaluation.side_by_side.pairing.OUTCOMES",
        "SideBySideDifferenceEnum": "evaluation.side_by_side.pairing.DIFFERENCES",
    },
}

# --- Celery ---------------------------------------------------------------------------------
# Redis in production and CI; by default kombu's filesystem transport, which needs no server
# but still runs a real worker process beside the development server.
# The filesystem transport ignores the host, but kombu logs "No hostname was supplied" at
# every connection when the URL has none: name it.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://localhost//")
CELERY_FILESYSTEM_DIR = VAR_DIR / "celery"
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT = "config.broker:Transport"  # messages written whole (see there)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_FILESYSTEM_DIR / "queue"),
        "data_folder_out": str(CELERY_FILESYSTEM_DIR / "queue"),
        "control_folder": str(CELERY_FILESYSTEM_DIR / "control"),
    }
else:
    # Redis hands a task not acknowledged within this time to another worker. Runs do not
    # rely on it (their sweep, below, requeues a lost worker's tasks within about a minute):
    # it is a backstop, set above the longest judging task so that a task still running
    # is not handed out twice for nothing.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": envint("CELERY_VISIBILITY", 3600)}
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", "django-db")
CELERY_RESULT_EXTENDED = False
CELERY_RESULT_EXPIRES = 3600
CELERY_TASK_IGNORE_RESULT = True  # tasks write to the database; results are opt-in.
CELERY_TASK_ACKS_LATE = (
    True  # a task is acknowledged after it ran: a killed worker's work is redone
)
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1  # long tasks: do not hoard messages a free worker could take
# A test session gets a queue of its own, so it never races a development worker or another
# test run on the same broker; the test worker process is told the name through CELERY_QUEUE.
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_QUEUE") or (
    f"test-{os.getpid()}" if TESTING else "workbench"
)
CELERY_TASK_ALWAYS_EAGER = envbool("CELERY_TASK_ALWAYS_EAGER", False)
# `celery -A config beat` reads schedules from the database (django-celery-beat): admins
# add them in the site administration, no restart needed.
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# Beat writes an entry's last run to its row right after sending it, not up to three minutes
# later: the Schedules page shows the next run from it, and /healthz and the page read the
# heartbeat entry's row as "beat seen" (evaluation/schedules/beat.py). One row per send.
CELERY_BEAT_SYNC_EVERY = 1
# Seconds between beat's heartbeats (config/celery.py); beat counts as not seen after three
# missed ones. Read by beat, and by the web processes to judge the heartbeat's age.
SCHEDULER_HEARTBEAT = envint("SCHEDULER_HEARTBEAT", 60)
if SCHEDULER_HEARTBEAT < 1:  # 0 would have beat send it in a loop
    raise ImproperlyConfigured("SCHEDULER_HEARTBEAT must be at least 1 (seconds).")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
HEALTHZ_WORKER_TIMEOUT = float(os.environ.get("HEALTHZ_WORKER_TIMEOUT", "3"))
HEALTHZ_PING_QUEUE = os.environ.get("HEALTHZ_PING_QUEUE") or None  # None: the default queue
# Judging tasks may go to a queue of their own, served by dedicated workers.
RUNS_QUEUE = os.environ.get("RUNS_QUEUE") or None
# A queue per judge provider, by the host (or host:port) of the judge's endpoint:
# "api.openai.com=judges-openai,vllm.internal:8000=judges-vllm". Each provider's workers
# (own hosts, own rate limits) serve its queue; judges of other hosts go to RUNS_QUEUE
# (evaluation.runs.queue.queue_for; docs/operations.md, "Past one machine").
RUNS_QUEUE_BY_HOST = dict(
    item.split("=", 1) for item in envlist("RUNS_QUEUE_BY_HOST") if "=" in item
)
# Self-healing runs (evaluation/runs/healing.py): each worker refreshes the leases of the
# tasks it runs every RUNS_HEARTBEAT seconds and sweeps every RUNS_SWEEP seconds; a lease
# silent for RUNS_LEASE_TIMEOUT seconds belongs to a lost worker and its task is queued
# again, at most RUNS_MAX_REQUEUES times before the task is given up with error verdicts.
RUNS_HEARTBEAT = envint("RUNS_HEARTBEAT", 10)
RUNS_SWEEP = envint("RUNS_SWEEP", 15)
RUNS_LEASE_TIMEOUT = envint("RUNS_LEASE_TIMEOUT", 60)
RUNS_MAX_REQUEUES = envint("RUNS_MAX_REQUEUES", 5)
# A run's task waits out a transient database error (a restart, a failover) for up to this
# many seconds, holding the results of the judge calls it made, before leaving the task to
# the sweep (evaluation/transient.py `retrying`).
RUNS_DB_RETRY_FOR = envint("RUNS_DB_RETRY_FOR", 300)
# Figures served while updating (analytics, run scores) are refreshed at most once every
# FIGURES_REFRESH_SPACING seconds per run: a team labelling without pause would otherwise
# keep a refresh (7 s of a core at the full scale preset) running back to back.
FIGURES_REFRESH_SPACING = envint("FIGURES_REFRESH_SPACING", 0 if TESTING else 30)
# ... and at least FIGURES_REFRESH_PAUSE times as long as the last refresh of the same
# figures took (evaluation.kept.refresh.spacing): at 720,000 verdicts a run's analytics
# take 20-37 s to count, and a fixed 30 s let labellers keep one of two cores busy with them.
FIGURES_REFRESH_PAUSE = envint("FIGURES_REFRESH_PAUSE", 0 if TESTING else 4)
# A kept figure that a page needs and nobody has computed yet (after seeding, a migration,
# a deploy that changes a figure's version, a cache flush) is computed by the refresh task
# while the page says "computing" (evaluation.kept.cold): a recount of a million verdicts
# is never paid inside a user's request. On in the test suite only, where most tests read
# a figure once, right after writing its data, without a worker; the tests of the rule
# itself turn it off.
FIGURES_COLD_IN_REQUEST = envbool("FIGURES_COLD_IN_REQUEST", TESTING)
# `migrate` (post_migrate) and each gunicorn start queue the warm-up of every kept figure
# (evaluation.analytics.warmup); off in the test suite, whose flushes send post_migrate
# between tests and would have a worker warm one test's data into the next.
FIGURES_WARM_UP = envbool("FIGURES_WARM_UP", not TESTING)
# Starting a run opens a TCP connection to each LLM judge's host first (no request), so an
# unreachable endpoint is refused at once; off where only the workers can reach it.
RUNS_PREFLIGHT_CONNECT = envbool("RUNS_PREFLIGHT_CONNECT", True)
# The currency of the judges' prices, shown with every cost estimate (a label: no conversion).
COST_CURRENCY = os.environ.get("COST_CURRENCY", "USD")
# Retries of transient judge failures (429, 5xx, timeouts, dropped connections): attempts
# per call, and the backoff base in seconds: attempt n waits a random time up to
# base × 2^n, at most 20 s; a Retry-After from the server wins, up to 60 s.
JUDGE_RETRY_ATTEMPTS = envint("JUDGE_RETRY_ATTEMPTS", 6)
JUDGE_RETRY_BASE_DELAY = float(os.environ.get("JUDGE_RETRY_BASE_DELAY", "0.5"))
# A judge's circuit breaker (evaluation/judging/circuit.py): JUDGE_CIRCUIT_FAILURES outage
# failures (no connection, timeouts, 5xx) within JUDGE_CIRCUIT_WINDOW seconds open it; its
# calls then wait, one probe goes after JUDGE_CIRCUIT_PROBE_MIN seconds, doubling up to
# JUDGE_CIRCUIT_PROBE_MAX, and a reply closes it. A call that waited JUDGE_CIRCUIT_MAX_WAIT
# seconds gives up (an error verdict "judge_unreachable"; resuming the run continues).
JUDGE_CIRCUIT_FAILURES = envint("JUDGE_CIRCUIT_FAILURES", 10)
JUDGE_CIRCUIT_WINDOW = float(os.environ.get("JUDGE_CIRCUIT_WINDOW", "30"))
JUDGE_CIRCUIT_PROBE_MIN = float(os.environ.get("JUDGE_CIRCUIT_PROBE_MIN", "5"))
JUDGE_CIRCUIT_PROBE_MAX = float(os.environ.get("JUDGE_CIRCUIT_PROBE_MAX", "60"))
JUDGE_CIRCUIT_MAX_WAIT = float(os.environ.get("JUDGE_CIRCUIT_MAX_WAIT", "3600"))
# Judge calls in flight across one worker process (all its threads); 0: no cap beyond
# threads × Run.concurrency. See docs/benchmarks.md for sizing threads against it.
JUDGE_MAX_IN_FLIGHT = envint("JUDGE_MAX_IN_FLIGHT", 0)
# Judges' API keys are read only from variables named JUDGE_KEY_PREFIX… or listed in
# JUDGE_KEY_VARIABLES (e.g. OPENAI_API_KEY), so no other secret of the server can be sent
# to an endpoint; JUDGE_ALLOWED_HOSTS, when set, is the only hosts judges may call
# ("api.openai.com", ".openai.azure.com" for any subdomain). evaluation/judging/keys.py.
JUDGE_KEY_PREFIX = os.environ.get("JUDGE_KEY_PREFIX", "JUDGE_KEY_")
JUDGE_KEY_VARIABLES = envlist("JUDGE_KEY_VARIABLES")
JUDGE_ALLOWED_HOSTS = envlist("JUDGE_ALLOWED_HOSTS")
# Judges on loopback or a private network (a self-hosted vLLM or Ollama): off, judges call
# only public addresses and the hosts JUDGE_ALLOWED_HOSTS lists. Link-local and cloud
# metadata addresses stay refused either way (config/egress.py).
JUDGE_ALLOW_PRIVATE_NETWORK = envbool("JUDGE_ALLOW_PRIVATE_NETWORK", False)
# Celery closes each thread's database connection before and after every task unless told
# to reuse it; config/celery.py then applies DATABASE_CONN_MAX_AGE as a web request does.
CELERY_DB_REUSE_MAX = envint("CELERY_DB_REUSE_MAX", 1000)
# Tasks that wait out a database restart (evaluation/transient.py: a scheduled run's tick,
# the regression alerts): attempts, the first included, and the backoff in seconds: retry
# n waits a random time between half and all of min(max, base × 2^n). The defaults keep a
# tick trying for about 18 to 35 minutes.
TASK_DB_RETRY_ATTEMPTS = envint("TASK_DB_RETRY_ATTEMPTS", 13)
TASK_DB_RETRY_BASE_DELAY = envint("TASK_DB_RETRY_BASE_DELAY", 5)
TASK_DB_RETRY_MAX_DELAY = envint("TASK_DB_RETRY_MAX_DELAY", 300)

# --- Application ----------------------------------------------------------------------------
DEMO_ADMIN_USERNAME = "admin"
DEMO_PASSWORD = os.environ.get("DEMO_PASSWORD", "demo-password")
# Hosts regression alerts' webhooks may POST to ("hooks.example.com", ".example.com" for any
# subdomain), except at a link-local or metadata address. Empty: any host that resolves
# only to public addresses, so that a dataset admin cannot make the workers reach internal
# services (evaluation/alerts/webhooks.py, config/egress.py).
ALERT_WEBHOOK_ALLOWED_HOSTS = envlist("ALERT_WEBHOOK_ALLOWED_HOSTS")
# A webhook POST that fails for a reason that may pass (no connection, a timeout, 408, 429,
# 5xx) is tried again: attempts, the first included, and the backoff in seconds as above
# (evaluation/alerts/delivery.py). The defaults spread six attempts over 8 to 16 minutes.
ALERT_WEBHOOK_RETRY_ATTEMPTS = envint("ALERT_WEBHOOK_RETRY_ATTEMPTS", 6)
ALERT_WEBHOOK_RETRY_BASE_DELAY = envint("ALERT_WEBHOOK_RETRY_BASE_DELAY", 30)
ALERT_WEBHOOK_RETRY_MAX_DELAY = envint("ALERT_WEBHOOK_RETRY_MAX_DELAY", 600)
# Rewards for RL trainers (evaluation/rewards/, docs/rewards.md). A request holds at most
# REWARDS_MAX_BATCH completions, whose judge calls go out together, at most
# REWARDS_CONCURRENCY at a time per judge. Each token (each user without one) may ask for
# REWARDS_ITEMS_PER_MINUTE completions in any 60 s and REWARDS_ITEMS_PER_DAY in any 24 h
# (0: no limit), apart from evaluation runs. REWARDS_AUDIT_SAMPLE of the items (0 to 1) keep
# every vote for audit. The reward cache answers a vote seen within REWARDS_CACHE_DAYS.
# The shaping defaults, in words, apply when a request does not set them (0: off).
REWARDS_MAX_BATCH = envint("REWARDS_MAX_BATCH", 256)
REWARDS_CONCURRENCY = envint("REWARDS_CONCURRENCY", 64)
REWARDS_ITEMS_PER_MINUTE = envint("REWARDS_ITEMS_PER_MINUTE", 6000)
REWARDS_ITEMS_PER_DAY = envint("REWARDS_ITEMS_PER_DAY", 1_000_000)
REWARDS_AUDIT_SAMPLE = float(os.environ.get("REWARDS_AUDIT_SAMPLE", "0.0"))
REWARDS_CACHE_DAYS = envint("REWARDS_CACHE_DAYS", 30)
REWARDS_LENGTH_REFERENCE = envint("REWARDS_LENGTH_REFERENCE", 0)
REWARDS_LENGTH_EXPONENT = float(os.environ.get("REWARDS_LENGTH_EXPONENT", "0.5"))
REWARDS_MAX_WORDS = envint("REWARDS_MAX_WORDS", 0)
REWARDS_OVER_LENGTH_PENALTY = float(os.environ.get("REWARDS_OVER_LENGTH_PENALTY", "1.0"))
# The rewards service (config/asgi_rewards.py, docs/operations.md#the-rewards-service): one
# trainer's requests arriving within REWARDS_WAVE_MS of the first are graded as one wave
# (evaluation/rewards/waves.py); a process holding REWARDS_MAX_PENDING samples answers 503
# with Retry-After; its database work runs on REWARDS_DB_THREADS threads, so it opens at
# most that many connections (per process; plus PgBouncer's or the pool's own bound).
REWARDS_WAVE_MS = envint("REWARDS_WAVE_MS", 5)
REWARDS_MAX_PENDING = envint("REWARDS_MAX_PENDING", 4096)
REWARDS_DB_THREADS = envint("REWARDS_DB_THREADS", 4)
# The application_name of the rewards service's database connections (config.settings_rewards).
REWARDS_APPLICATION_NAME = "workbench-rewards"

# --- Dataset exports and imports ------------------------------------------------------------
# Exports bigger than DATA_EXPORT_STREAM_MAX_ROWS rows run as a Celery job that writes a zip
# into DATA_EXPORT_DIR (shared by the web and worker machines); its download link works for
# the dataset's admins until DATA_EXPORT_EXPIRY_HOURS have passed, then the file is removed.
DATA_EXPORT_DIR = Path(os.environ.get("DATA_EXPORT_DIR", VAR_DIR / "exports"))
DATA_EXPORT_EXPIRY_HOURS = envint("DATA_EXPORT_EXPIRY_HOURS", 24)
DATA_EXPORT_STREAM_MAX_ROWS = envint("DATA_EXPORT_STREAM_MAX_ROWS", 100_000)
# Uploaded import files wait here while they are checked and written.
# Archived runs' verdicts, one Parquet file per run (evaluation.archive; docs/operations.md,
# "Archiving old runs"). A mounted S3-compatible bucket (s3fs, rclone mount) works here too.
RUN_ARCHIVE_DIR = Path(os.environ.get("RUN_ARCHIVE_DIR", VAR_DIR / "archive"))
DATA_IMPORT_DIR = Path(os.environ.get("DATA_IMPORT_DIR", VAR_DIR / "imports"))
