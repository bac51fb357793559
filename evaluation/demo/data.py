"""Demo content written for this project: fictional companies, finance-style queries.

The companies and figures are invented so that nothing here can be mistaken for a real
company's results. Two experts annotate each query independently; two systems answer it.
"""

from __future__ import annotations

DATASET = {
    "name": "Finance demo",
    "description": (
        "Analyst questions about five fictional listed companies, each fixed at a query date, "
        "with two experts' checklists and two systems' answers."
    ),
}

EXPERTS = ("alice", "bob")
REVIEWER = "rita"
SYSTEMS = (("Atlas QA", "2026.10"), ("Baseline RAG", "1.4"))

# Per query: the source types every fact criterion is tagged with, and one citation
# (title, document id, source type, publication date) on the first fact criterion.
SOURCES = [
    (
        ("earnings-call-transcript", "earnings-release"),
        (
            "Northwind Q3 FY2026 earnings call transcript",
            "NWS-2026-Q3-call",
            "earnings-call-transcript",
            "2026-10-28",
        ),
    ),
    (
        ("filings",),
        ("Harbor Logistics annual report FY2025", "HBL-10-K-2025", "filings", "2026-02-27"),
    ),
    (
        ("press-release",),
        ("Crestline raises quarterly dividend", "CRE-PR-2026-02-12", "press-release", "2026-02-12"),
    ),
    (
        ("filings", "earnings-release"),
        (
            "Meridian Software FY2026 results",
            "MRS-2026-FY-release",
            "earnings-release",
            "2026-08-20",
        ),
    ),
    (
        ("filings",),
        ("Solano Pharma annual report 2025, risk factors", "SOL-AR-2025", "filings", "2026-03-05"),
    ),
    (
        ("earnings-release", "earnings-call-transcript"),
        (
            "Harbor Logistics Q2 2026 earnings release",
            "HBL-2026-Q2-release",
            "earnings-release",
            "2026-08-05",
        ),
    ),
    (
        ("filings", "earnings-release"),
        ("Meridian Software annual report FY2026", "MRS-10-K-2026", "filings", "2026-09-02"),
    ),
]

# Notes on demo criteria. The first shows the vagueness override (docs/guidelines.md): the
# criterion names no figure or company because its query fixes both.
NOTES = {
    "Explains that data-centre demand drove the revenue beat.": (
        "override fact-anchor: the query fixes the company and the quarter (Northwind, Q3 FY2026)"
    ),
}

# Which demo checklists are submitted (the rest stay drafts), by (query index, expert). The
# last two queries have longer checklists (12 and 16 criteria, the others 5 to 7), so that
# the analytics page's complexity curve has points in three buckets (<10, 10–14, 15–19),
# not one: a curve, with the systems falling behind as checklists grow.
SUBMITTED = {(0, "alice"), (0, "bob"), (1, "alice"), (2, "bob"), (5, "alice"), (6, "bob")}

# (text, query date, category, {expert: [(kind, criterion)]}, {system name: answer markdown})
QUERIES = [
    (
        "Summarise Northwind Semiconductors' Q3 FY2026 earnings call and compare the results "
        "with the guidance given on the Q2 call.",
        "2026-10-30",
        "Forward guidance and comparison",
        {
            "alice": [
                (
                    "methodology",
                    "Uses the Q3 FY2026 earnings call of 28 October 2026 as the primary source.",
                ),
                (
                    "methodology",
                    "Compares Q3 results against the guidance issued on the Q2 FY2026 call.",
                ),
                ("fact", "States Q3 revenue of $4.12 billion."),
                (
                    "fact",
                    "States that Q3 revenue exceeded the top of the $3.9–4.0 billion guidance range.",
                ),
                ("fact", "Reports a Q3 gross margin of 61.5%."),
                ("fact", "Mentions the new Q4 revenue guidance of $4.3–4.45 billion."),
                ("format", "Presents guidance versus actuals in a table."),
            ],
            "bob": [
                ("methodology", "Covers the Q3 FY2026 call and the Q2 FY2026 guidance only."),
                ("fact", "States Q3 revenue of $4.12 billion."),
                ("fact", "Explains that data-centre demand drove the revenue beat."),
                ("fact", "Reports a Q3 gross margin of 61.5%, above the 60% guided."),
                ("fact", "Mentions the CFO's comment that inventory days fell to 98."),
                ("format", "Highlights the headline figures in bold text."),
            ],
        },
        {
            "Atlas QA": (
                "**Northwind Semiconductors, Q3 FY2026 (call of 28 October 2026)**\n\n"
                "| Metric | Q2 guidance | Q3 actual |\n|---|---|---|\n"
                "| Revenue | $3.9–4.0 billion | **$4.12 billion** |\n"
                "| Gross margin | about 60% | **61.5%** |\n\n"
                "Revenue beat the top of the range on data-centre demand. Management guided "
                "Q4 revenue to $4.3–4.45 billion and said inventory days fell to 98."
            ),
            "Baseline RAG": (
                "Northwind reported revenue of about $4 billion in Q3, in line with guidance, "
                "and a gross margin near 60%. The company expects growth to continue."
            ),
        },
    ),
    (
        "How did Harbor Logistics' operating margin change from FY2023 to FY2025?",
        "2026-03-15",
        "Time series and deltas",
        {
            "alice": [
                ("methodology", "Uses the annual reports for FY2023, FY2024 and FY2025."),
                ("fact", "States the FY2023 operating margin of 7.8%."),
                ("fact", "States the FY2024 operating margin of 6.9%."),
                ("fact", "States the FY2025 operating margin of 8.4%."),
                ("fact", "Computes the change from FY2023 to FY2025 as +0.6 percentage points."),
                ("format", "Presents the three margins in a table."),
            ],
            "bob": [
                ("methodology", "Defines operating margin as operating income divided by revenue."),
                ("fact", "States the FY2023 operating margin of 7.8%."),
                ("fact", "States the FY2025 operating margin of 8.4%."),
                ("fact", "Explains the FY2024 dip by higher fuel costs."),
                ("format", "Uses bullet points for the year-by-year figures."),
            ],
        },
        {
            "Atlas QA": (
                "Harbor Logistics' operating margin moved as follows:\n\n"
                "- FY2023: 7.8%\n- FY2024: 6.9% (higher fuel costs)\n- FY2025: 8.4%\n\n"
                "Over the period the margin rose by 0.6 percentage points."
            ),
            "Baseline RAG": (
                "| Year | Operating margin |\n|---|---|\n| FY2023 | 7.8% |\n| FY2025 | 8.4% |\n\n"
                "The margin improved."
            ),
        },
    ),
    (
        "What did Crestline Energy announce about its dividend in 2026 up to the query date?",
        "2026-08-01",
        "Event digest",
        {
            "alice": [
                ("methodology", "Covers announcements from 1 January 2026 to 1 August 2026."),
                (
                    "fact",
                    "States the quarterly dividend was raised to $0.52 per share in February 2026.",
                ),
                (
                    "fact",
                    "Mentions the $1.5 billion share buyback announced alongside the dividend.",
                ),
                ("fact", "States the dividend yield was about 4.1% at the query date."),
                ("format", "Lists the announcements in date order."),
            ],
            "bob": [
                ("methodology", "Uses Crestline's press releases as the primary source."),
                ("fact", "States the quarterly dividend was raised to $0.52 per share."),
                ("fact", "States the previous quarterly dividend was $0.48 per share."),
                (
                    "fact",
                    "Mentions that the payout ratio target stayed at 40–50% of free cash flow.",
                ),
                ("format", "Highlights the new dividend in bold text."),
            ],
        },
        {
            "Atlas QA": (
                "1. **February 2026**: the quarterly dividend rose from $0.48 to **$0.52** per "
                "share, with a $1.5 billion share buyback.\n"
                "2. The payout target stayed at 40–50% of free cash flow.\n\n"
                "At the query date the yield was about 4.1%."
            ),
            "Baseline RAG": "Crestline raised its dividend in 2026 to $0.52 per share.",
        },
    ),
    (
        "Compare the cloud revenue growth of Meridian Software and Apex Systems in their "
        "latest fiscal year.",
        "2026-09-10",
        "Point-fact retrieval",
        {
            "alice": [
                (
                    "methodology",
                    "Uses each company's latest full fiscal year reported before the query date.",
                ),
                ("fact", "States Meridian's cloud revenue grew 24% year over year."),
                ("fact", "States Apex's cloud revenue grew 17% year over year."),
                ("fact", "Concludes that Meridian grew faster than Apex."),
                ("format", "Presents both companies side by side in a table."),
            ],
            "bob": [
                ("methodology", "Compares the fiscal years ending in 2026 for both companies."),
                ("fact", "States Meridian's cloud revenue of $8.2 billion."),
                ("fact", "States Apex's cloud revenue of $11.6 billion."),
                ("fact", "States Meridian's cloud revenue grew 24% year over year."),
                ("fact", "States Apex's cloud revenue grew 17% year over year."),
            ],
        },
        {
            "Atlas QA": (
                "| Company | Cloud revenue | Growth |\n|---|---|---|\n"
                "| Meridian Software | $8.2 billion | 24% |\n| Apex Systems | $11.6 billion | 17% |\n\n"
                "Meridian grew faster, from a smaller base."
            ),
            "Baseline RAG": (
                "Meridian's cloud revenue grew 24% and Apex's grew 17%, so Meridian grew faster."
            ),
        },
    ),
    (
        "What are the main strategic risks Solano Pharma highlighted in its 2025 annual report?",
        "2026-04-20",
        "Strategic analysis",
        {
            "alice": [
                ("methodology", "Uses the risk factors section of the 2025 annual report."),
                ("fact", "Mentions the patent expiry of its lead drug Solavex in 2028."),
                ("fact", "Mentions the pending FDA decision on its oncology candidate."),
                ("fact", "Mentions pricing pressure from the US drug price negotiation programme."),
                ("format", "Groups the risks under headings."),
            ],
            "bob": [
                ("methodology", "Limits the answer to risks the company itself calls material."),
                ("fact", "Mentions the patent expiry of Solavex in 2028."),
                ("fact", "States Solavex made up 38% of 2025 revenue."),
                ("fact", "Mentions the concentration of manufacturing at one plant in Ireland."),
                ("format", "Uses bullet points for the risks."),
            ],
        },
        {
            "Atlas QA": (
                "### Product concentration\n- Solavex, 38% of 2025 revenue, loses patent "
                "protection in 2028.\n### Regulation\n- A pending FDA decision on its oncology "
                "candidate.\n- Pricing pressure from US drug price negotiation."
            ),
            "Baseline RAG": (
                "Solano Pharma faces risks from competition and regulation, and depends on one "
                "manufacturing site."
            ),
        },
    ),
    (
        "Summarise Harbor Logistics' Q2 2026 results: revenue, margins, volumes, cash and the "
        "outlook.",
        "2026-08-10",
        "Thematic extraction",
        {
            "alice": [
                (
                    "methodology",
                    "Uses the Q2 2026 earnings release of 5 August 2026 as the primary source.",
                ),
                ("methodology", "Compares each Q2 2026 figure with Q2 2025."),
                ("fact", "States Q2 2026 revenue of $2.31 billion."),
                ("fact", "States that revenue grew 6.5% from Q2 2025."),
                ("fact", "Reports a Q2 2026 operating margin of 8.9%."),
                ("fact", "States that container volumes rose 4% to 1.12 million TEU."),
                ("fact", "Reports adjusted earnings per share of $1.47."),
                ("fact", "Mentions fuel surcharge revenue of $180 million."),
                ("fact", "States free cash flow of $240 million for the quarter."),
                ("fact", "Mentions the full-year revenue guidance raised to $9.1–9.3 billion."),
                ("fact", "States net debt of $1.9 billion at 30 June 2026."),
                ("format", "Presents the quarter's figures in a table."),
            ],
            "bob": [
                ("methodology", "Limits the answer to the Q2 2026 earnings release and call."),
                ("fact", "States Q2 2026 revenue of $2.31 billion."),
                ("fact", "Reports a Q2 2026 operating margin of 8.9%."),
                ("fact", "Mentions the Asia–Europe service launched in May 2026."),
                ("format", "Uses bullet points for the headline figures."),
            ],
        },
        {
            "Atlas QA": (
                "**Harbor Logistics, Q2 2026** (release of 5 August 2026)\n\n"
                "| Metric | Q2 2025 | Q2 2026 |\n|---|---|---|\n"
                "| Revenue | $2.17 billion | **$2.31 billion** (+6.5%) |\n"
                "| Operating margin | 8.1% | **8.9%** |\n"
                "| Container volumes | 1.08 million TEU | **1.12 million TEU** (+4%) |\n"
                "| Adjusted EPS | $1.29 | **$1.47** |\n\n"
                "Free cash flow was $240 million. Management raised full-year revenue "
                "guidance to $9.1–9.3 billion."
            ),
            "Baseline RAG": (
                "Harbor Logistics reported Q2 2026 revenue of $2.31 billion, up on last year, "
                "with an operating margin of about 9%. The company raised its outlook."
            ),
        },
    ),
    (
        "Give an overview of Meridian Software's FY2026 annual report: growth, "
        "profitability, cash flow, capital returns and the FY2027 outlook.",
        "2026-09-20",
        "Strategic analysis",
        {
            "alice": [
                ("methodology", "Uses the FY2026 annual report as the only source."),
                ("fact", "States FY2026 total revenue of $21.4 billion."),
                ("fact", "Reports an FY2026 operating margin of 31.2%."),
                ("fact", "Mentions FY2027 revenue guidance of $23.5–24.0 billion."),
                ("format", "Presents the figures in a table."),
            ],
            "bob": [
                (
                    "methodology",
                    "Uses the FY2026 annual report filed on 2 September 2026 as the primary "
                    "source.",
                ),
                ("methodology", "Compares FY2026 with FY2025 for every figure it gives."),
                ("fact", "States FY2026 total revenue of $21.4 billion."),
                ("fact", "States that total revenue grew 14% year over year."),
                ("fact", "Reports cloud revenue of $8.2 billion, 38% of the total."),
                ("fact", "States that licence revenue fell 3% to $5.1 billion."),
                ("fact", "Reports an FY2026 operating margin of 31.2%."),
                ("fact", "States diluted earnings per share of $6.85."),
                ("fact", "States operating cash flow of $7.9 billion."),
                ("fact", "States free cash flow of $6.6 billion."),
                ("fact", "Mentions share buybacks of $3.0 billion in FY2026."),
                ("fact", "States the annual dividend of $2.40 per share."),
                ("fact", "Mentions the acquisition of Quillon Analytics for $1.2 billion."),
                ("fact", "Reports 61,000 employees at the end of FY2026."),
                ("fact", "Mentions FY2027 revenue guidance of $23.5–24.0 billion."),
                ("format", "Groups the figures under headings."),
            ],
        },
        {
            "Atlas QA": (
                "### Growth\n- Revenue rose 14% to $21.4 billion; cloud revenue reached "
                "$8.2 billion, 38% of the total.\n"
                "### Profitability\n- Operating margin 31.2%; diluted EPS $6.85.\n"
                "### Cash and returns\n- Free cash flow $6.6 billion; buybacks of $3.0 "
                "billion.\n"
                "### Outlook\n- FY2027 revenue guidance of $23.5–24.0 billion."
            ),
            "Baseline RAG": (
                "Meridian Software grew revenue to $21.4 billion in FY2026 with strong cloud "
                "growth and a healthy margin, and expects further growth in FY2027."
            ),
        },
    ),
]

# Atlas QA is an agent: on the first two queries its answers carry the conversation that
# led to them (tool calls with arguments, tool results), the passages it retrieved and its
# metadata. Baseline RAG retrieves passages but calls no tool. (query index, system) ->
# fields of the answer; see docs/data-formats.md#answers.
_NWS_CONTEXT = [
    {
        "id": "NWS-2026-Q3-call#p4",
        "title": "Northwind Q3 FY2026 earnings call transcript",
        "source": "earnings-call-transcript",
        "text": "CFO: Revenue for the third quarter was $4.12 billion, above the top of our "
        "$3.9 to $4.0 billion range, driven by data-centre demand. Gross margin was 61.5%. "
        "Inventory days fell to 98.",
    },
    {
        "id": "NWS-2026-Q3-call#p9",
        "title": "Northwind Q3 FY2026 earnings call transcript",
        "source": "earnings-call-transcript",
        "text": "CEO: For the fourth quarter we expect revenue of $4.3 to $4.45 billion.",
    },
    {
        "id": "NWS-2026-Q2-call#p3",
        "title": "Northwind Q2 FY2026 earnings call transcript",
        "source": "earnings-call-transcript",
        "text": "CFO: We guide Q3 revenue to $3.9 to $4.0 billion and gross margin of about 60%.",
    },
]
AGENT_ANSWERS = {
    (0, "Atlas QA"): {
        "turns": [
            {
                "role": "user",
                "content": "Summarise Northwind Semiconductors' Q3 FY2026 earnings call and "
                "compare the results with the guidance given on the Q2 call.",
            },
            {
                "role": "assistant",
                "content": "I will read the Q3 call, then the Q2 guidance.",
                "tool_calls": [
                    {
                        "id": "call-1",
                        "name": "search_transcripts",
                        "arguments": {"company": "Northwind", "quarter": "Q3 FY2026"},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "call-1",
                "name": "search_transcripts",
                "content": "NWS-2026-Q3-call#p4, NWS-2026-Q3-call#p9",
            },
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call-2",
                        "name": "search_transcripts",
                        "arguments": {"company": "Northwind", "quarter": "Q2 FY2026"},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "call-2",
                "name": "search_transcripts",
                "content": "NWS-2026-Q2-call#p3",
            },
        ],
        "context": _NWS_CONTEXT,
        "metadata": {
            "model": "atlas-agent-2026.10",
            "latency_ms": 8420,
            "cost": 0.031,
            "steps": ["plan", "retrieve", "retrieve", "write"],
        },
    },
    (0, "Baseline RAG"): {
        "context": _NWS_CONTEXT[:1],
        "metadata": {"model": "baseline-rag-1.4", "latency_ms": 1900},
    },
    (1, "Atlas QA"): {
        "turns": [
            {
                "role": "user",
                "content": "How did Harbor Logistics' operating margin change from FY2023 "
                "to FY2025?",
            },
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call-1",
                        "name": "search_filings",
                        "arguments": {"company": "Harbor Logistics", "form": "10-K"},
                    },
                    {
                        "id": "call-2",
                        "name": "calculator",
                        "arguments": {"expression": "9.6 - 7.8"},
                    },
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "call-1",
                "name": "search_filings",
                "content": "HBL-10-K-2025: operating margin FY2023 7.8%, FY2025 9.6%.",
            },
            {"role": "tool", "tool_call_id": "call-2", "name": "calculator", "content": "1.8"},
        ],
        "context": [
            {
                "id": "HBL-10-K-2025#item7",
                "title": "Harbor Logistics annual report FY2025",
                "source": "filings",
                "text": "Operating margin was 9.6% in FY2025, compared with 7.8% in FY2023.",
            }
        ],
        "metadata": {"model": "atlas-agent-2026.10", "latency_ms": 5120, "cost": 0.018},
    },
}

# Deterministic trajectory checks and evidence settings on some criteria, matched by
# (query index, author, criterion text). The offline panel decides the checks; an LLM judge
# also reads "evidence": the retrieved context.
CRITERION_CHECKS = {
    (0, "alice", "Uses the Q3 FY2026 earnings call of 28 October 2026 as the primary source."): {
        "kind": "tool_sequence",
        "params": {
            "calls": [
                {
                    "name": "search_transcripts",
                    "arguments": {"company": "Northwind", "quarter": "Q3 FY2026"},
                },
            ],
            "mode": "in_order",
            "compare_arguments": True,
        },
    },
    (0, "bob", "Covers the Q3 FY2026 call and the Q2 FY2026 guidance only."): {
        "kind": "tool_set",
        "params": {"tools": ["search_transcripts"]},
    },
    (0, "bob", "Explains that data-centre demand drove the revenue beat."): {
        "kind": "keyword_share",
        "params": {"keywords": ["data-centre demand", "beat", "revenue"]},
        "threshold": 0.66,
    },
    (0, "alice", "States Q3 revenue of $4.12 billion."): {"evidence": "context"},
}
