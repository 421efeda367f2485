#!/usr/bin/env python3
"""Free-form MetaQA questions, set F: a sixth, fresh hand-written phrase table
for testing a question planner on wording it was never tuned on.

    python3 benches/metaqa/freeform_f.py --kb $DATA/metaqa/kb.tsv \\
        --out benches/metaqa/freeform-f \\
        --avoid benches/metaqa/freeform/paths.tsv \\
        --avoid benches/metaqa/freeform-b/paths.tsv \\
        --avoid benches/metaqa/freeform-c/paths.tsv \\
        --avoid benches/metaqa/freeform-d/paths.tsv \\
        --avoid benches/metaqa/freeform-e/paths.tsv

PHRASES_F covers the same path types as freeform_e.py's PHRASES_E (every 1-hop
relation and inverse there, every 2-hop and 3-hop chain there), 6 phrasings
each, written the way varied people ask a movie assistant: plain questions,
chatty ones with a reason in front ("I'm guessing {e}'s age from their films
- ..."), imperatives ("Do a cast lookup for me on this title: {e}."), the
topic at the start, middle or end, and everyday words for the roles and
things (casting nerd, directing buddies, on-screen colleagues, watch list,
hashtags). About a third are written the way a search-box user or a
non-native speaker types: short and slightly ungrammatical ("{e} director
other movies genres", "who is write the story of film {e}"). No phrasing
repeats, or is a mere word swap of, one in PHRASES, PHRASES_B, PHRASES_C,
PHRASES_D, PHRASES_E or MetaQA's own templates.

Outputs have the same formats as set E's: OUT/bracketed.txt (topic in
[brackets]), OUT/plain.txt (no brackets), both `question<TAB>answer|answer`,
and OUT/paths.tsv (hop, bracketed question, topic, gold chain); 50 questions
per hop. The command line, KB loading, sampling (round-robin over path types,
answers excluding the topic), writing and reading of --avoid files are set
C's (freeform_c.py's run). --avoid may be given more than once or
as a comma list (pass sets A's to E's paths.tsv, as above, to keep the six
sets' topics disjoint). Deterministic for a given KB, --seed and --avoid
files.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from freeform_c import run  # noqa: E402

# (path, phrasings); {e} is the topic entity.
PHRASES_F = [
    # 1-hop
    ("directed_by", [
        "Settle an argument for us: who directed {e}?",
        "I'm adding {e} to my spreadsheet and the director column is empty. Who goes there?",
        "Can you find out which director made it? It's called {e}.",
        "Hey, quick one about {e} - whose film is it, director-wise?",
        "director name for {e} film pls",
        "movie {e} direct by who?",
    ]),
    ("written_by", [
        "I'm trying to get into screenwriting and {e} is one of my favourites - who wrote it?",
        "For {e}, who actually sat down and wrote the thing?",
        "Need the scriptwriter for a movie, title is {e}.",
        "Which writer should I look up if I loved the script of {e}?",
        "{e} writer who",
        "who is write the story of film {e}",
    ]),
    ("starred_actors", [
        "Putting on {e} for the family tonight - which actors will we be seeing?",
        "I think I saw {e} years ago but can't place the actors - who was in it?",
        "Before I rent {e}: who acts in it? Anyone I'd know?",
        "Do a cast lookup for me on this title: {e}.",
        "actors {e}",
        "{e} movie, who are playing in it",
    ]),
    ("has_genre", [
        "Trying to decide if {e} suits a date night - what genre is it?",
        "My kids want to watch {e}. Which genre is it classed as?",
        "Help me label {e} with its genre for our movie club list.",
        "Do you know the genre of this film I found? It's {e}.",
        "{e} what kind genre",
        "genre {e} film",
    ]),
    ("release_year", [
        "Is {e} older than me? What year was it released?",
        "For the caption on my movie-night flyer I need the year {e} came out.",
        "Check when {e} was first released and give me the year.",
        "The film's called {e}; any idea what year it's from?",
        "{e} release yr",
        "what year {e} was make",
    ]),
    ("in_language", [
        "I want to show {e} to my exchange student - which language is it in?",
        "We're hosting a foreign-film night; what language does {e} come in?",
        "Look up the language of a film for me: {e}.",
        "Asking for my language class - the film {e}, what language do they speak in it?",
        "lang of {e} movie",
        "film {e} - they talking which language",
    ]),
    ("directed_by_inv", [
        "I'm planning a weekend of {e}'s films - the ones they directed. What should be on the list?",
        "Point me to the movies {e} was in charge of directing.",
        "Is there anything in the catalogue that {e} directed? list it",
        "Name every film where the director is {e}.",
        "list movie {e} make as director",
        "movies directed from {e}",
    ]),
    ("written_by_inv", [
        "I just read an interview with {e}, the screenwriter - which of their scripts got made into films?",
        "Which movies started out on {e}'s laptop as scripts?",
        "Films where the writer is {e}?",
        "My professor keeps mentioning {e} as a screenwriter; which films should I look up?",
        "{e} screenplays movies",
        "films that {e} has wrote",
    ]),
    ("starred_actors_inv", [
        "I saw {e} in an interview and want to watch their work - what movies should I look for them in?",
        "Pull together {e}'s acting credits, film titles only.",
        "Has {e} been in anything? name the movies",
        "Which movies hired {e} as an actor?",
        "{e} movies list actor",
        "in which movie {e} is playing",
    ]),
    ("has_tags", [
        "If I were filing {e} in a library catalogue, which subject tags would go on the card?",
        "Sum up {e} the way a movie site's tags would.",
        "I'm writing the blurb for {e}; read me its tags so I get the themes right.",
        "Which hashtags go with {e}? its real tags, I mean",
        "search tags for {e}",
        "which tag words has {e}",
    ]),
    ("has_tags_inv", [
        "Doing a school project on {e} - pull up the films tagged with it.",
        "Which movies would show up if I clicked on the {e} tag?",
        "What have you got under the tag {e}? films only",
        "A movie night with the theme {e}: which films have that tag?",
        "tag {e} movie list",
        "films which has the tag {e}",
    ]),
    # 2-hop
    ("directed_by -> directed_by_inv", [
        "{e} blew me away - I want to work through its director's other films. Which are they?",
        "Which films did that director make besides this one? The one I mean is {e}.",
        "If {e} is the only film I know by its director, what should I watch next from them?",
        "Director deep-dive starting from {e}: list the other movies they directed.",
        "same director as {e} other movies",
        "{e} director make which other films",
    ]),
    ("directed_by_inv -> directed_by", [
        "I'm making a chart of {e}'s collaborators - which people directed films together with them?",
        "Was {e} ever one of two directors on a film? Who was the second one?",
        "Directing buddies of {e}?",
        "Sharing the director's job with {e} - who has done that?",
        "{e} co director who",
        "{e} direct with which other director",
    ]),
    ("directed_by_inv -> has_genre", [
        "I want to try {e}'s work as a director but I'm picky - what genres are we talking?",
        "Which genres does a {e}-directed movie tend to be?",
        "Genres, please, for whatever {e} has directed.",
        "What genres could I get if I picked a random film directed by {e}?",
        "{e} directed films genres",
        "what genre are the movies {e} make as director",
    ]),
    ("directed_by_inv -> in_language", [
        "Before I buy a box set of {e}'s directing, tell me which languages the films are in.",
        "Languages for the movies {e} made as a director - what are they?",
        "Say I only watch {e}'s directing work - which languages would I hear?",
        "Tell me the languages of the movies that have {e} in the director's chair.",
        "languages {e} films as director",
        "in which languages {e} is directing films",
    ]),
    ("directed_by_inv -> release_year", [
        "Over what stretch of years has {e} been directing? Give me the years their directed films came out.",
        "I'm making a timeline of {e}'s directing career. Which years go on it?",
        "Please get me release years for all of {e}'s directing jobs.",
        "Any idea what years {e}'s films as director were released in?",
        "years of {e} directing films",
        "what years {e} directed movies come out",
    ]),
    ("directed_by_inv -> starred_actors", [
        "I'm a casting nerd: which actors show up in the movies {e} directed?",
        "Who's been directed by {e}? actors only",
        "Who was on screen in the movies {e} directed?",
        "{e} directed some films - give me everyone who acted in them.",
        "actors in {e} directed movies",
        "which actor are playing in films from director {e}",
    ]),
    ("directed_by_inv -> written_by", [
        "Behind every film {e} directed there's a writer - who are they?",
        "List the screenplay credits on {e}'s directing work.",
        "I'm curious who {e} trusts with scripts - who wrote the films they directed?",
        "Writers on the films where {e} was the director?",
        "{e} directed movies writers",
        "scriptwriter for {e} directed film who",
    ]),
    ("starred_actors -> starred_actors_inv", [
        "Which films could I watch next if I want to see one of the actors from {e} again?",
        "Show me the other acting work of everyone in {e} - just the movie titles.",
        "I'm building a movie chain linked by actors. What can follow {e}? Give me films with one of its actors.",
        "My gran liked the people in {e}; find other films starring any of them for her.",
        "other movies with actors of {e}",
        "{e} actors play also in which movies",
    ]),
    ("starred_actors_inv -> directed_by", [
        "Whenever {e} shows up in a film, who's directing it? list them",
        "Check {e}'s acting credits and tell me the directors.",
        "Has {e} worked with any famous directors? name all the directors of their films",
        "For an interview with {e}, I want to ask about the directors they've acted for - who are they?",
        "directors {e} acted under",
        "{e} acting, director was who",
    ]),
    ("starred_actors_inv -> has_genre", [
        "I'd like to watch something with {e}, but what genres do their movies tend to be?",
        "Describe {e}'s acting career in genres.",
        "Which genres do I have to choose from if I want a film starring {e}?",
        "For the movies {e} acted in, what genres are they?",
        "{e} actor movies genres",
        "what kind genre is films with {e}",
    ]),
    ("starred_actors_inv -> in_language", [
        "I want to hear {e} in different languages - which languages are the films they acted in?",
        "Is {e} multilingual on screen? List the languages of the movies they've been in.",
        "Languages, please: every film {e} acted in.",
        "What languages would a dubbing team be working from for {e}'s films? the original languages of the films they acted in",
        "{e} acted films languages",
        "which language {e} speak in the movies",
    ]),
    ("starred_actors_inv -> release_year", [
        "When did {e} make movies? just the years they came out",
        "I'm guessing {e}'s age from their films - what years were those films released?",
        "Run down the years of all the movies {e} appears in.",
        "{e} was in movies - which years did they come out?",
        "years of films {e} acted in",
        "in what years {e} was acting in films",
    ]),
    ("starred_actors_inv -> starred_actors", [
        "If I made a web of who has acted with {e}, which names would connect?",
        "I'm watching a film with {e} - who else have they acted with in movies?",
        "Tell me {e}'s on-screen colleagues.",
        "Anyone famous who's shared a movie with {e}? list the actors",
        "{e} costars",
        "{e} play movie with which actors",
    ]),
    ("starred_actors_inv -> written_by", [
        "I'm curious who writes the movies {e} ends up in - which writers?",
        "Look up the scripts behind {e}'s films: who wrote them?",
        "{e} acted in them, but who wrote them? the films, I mean",
        "Any good writers behind the films with {e} in them? names please",
        "screenwriters of films {e} acts in",
        "who was writer for movies {e} play in",
    ]),
    ("written_by -> written_by_inv", [
        "I'm hooked on the dialogue of {e}; does the person who wrote it have other movies? which?",
        "Whoever scripted {e} - what's the rest of their filmography as a writer?",
        "Make me a watch list of the other films from the writer behind {e}.",
        "Did the writer of {e} do anything else? list the movies",
        "{e} writer other films",
        "{e} its writer make more films? which",
    ]),
    ("written_by_inv -> directed_by", [
        "{e} is a writer; which directors did their films end up with?",
        "Tell me the directors attached to the movies {e} wrote.",
        "Which directors have worked with {e} as the writer on their films?",
        "I'm researching {e} the screenwriter: who directed the movies they wrote?",
        "{e} scripts directors",
        "writer {e}: who directed those movies",
    ]),
    ("written_by_inv -> has_genre", [
        "Is {e} a comedy writer, a thriller writer, or what? Give the genres of the films they wrote.",
        "For the films {e} scripted, which genres are they?",
        "I'm shelving films by genre; where do the ones {e} wrote go?",
        "Break down {e}'s writing credits by genre.",
        "genres of movies writer {e} wrote",
        "{e} is writer of which genre films",
    ]),
    ("written_by_inv -> in_language", [
        "Before I go through {e}'s writing work, what languages are those films in?",
        "I speak only English and Spanish - which languages are the films {e} wrote in?",
        "{e} scripts: languages?",
        "Do the films {e} wrote need subtitles? which languages are they in",
        "films by writer {e} which languages",
        "in which language {e} write the films",
    ]),
    ("written_by_inv -> release_year", [
        "How far back do {e}'s writing credits go? List the years their films came out.",
        "Pin down the release dates, just years, for {e}'s screenplays that became movies.",
        "Which years got a new film with {e}'s name on the script?",
        "Was {e} writing films in the 80s or later? give the release years of their films",
        "{e} screenwriter filmography years",
        "when {e} write movies, which years it came out",
    ]),
    ("written_by_inv -> starred_actors", [
        "{e} writes the parts - who plays them? I mean the actors in their films.",
        "I loved the writing in {e}'s films; which actors were in them?",
        "Give me the cast lists for every movie written by {e}.",
        "Actors from the films that had {e} as a writer?",
        "cast in {e} written films",
        "actors playing in movies written of {e}",
    ]),
    ("written_by_inv -> written_by", [
        "Has {e} got a regular writing partner? name everyone who co-wrote with them",
        "I'm profiling {e}; who else wrote the films they wrote?",
        "Which screenwriters have worked on the same scripts as {e}?",
        "Which writers were in on the films {e} wrote?",
        "{e} cowriters",
        "{e} write scripts with who",
    ]),
    # 3-hop
    ("directed_by -> directed_by_inv -> has_genre", [
        "Whoever directed {e} - do their other films stay in one genre? which genres",
        "Help me pick my next film: take {e}'s director and tell me what genres their other films are.",
        "I'm curious about the director behind {e}. Which genres are the rest of their films?",
        "Pull up the director of {e} and read me the genres of their other movies.",
        "{e} director other movies genres",
        "director of {e} other film genre is what",
    ]),
    ("directed_by -> directed_by_inv -> in_language", [
        "I liked {e}. If I follow its director to their other films, will I need subtitles? which languages are they in",
        "Tell me what languages the director of {e} used in their other films.",
        "I'd like to explore the director of {e} more - what languages will I hear in their other films?",
        "Other work by {e}'s director: I need the languages.",
        "languages other films same director {e}",
        "director of {e} make other movies in which language",
    ]),
    ("directed_by -> directed_by_inv -> release_year", [
        "{e} made me curious about its director's career - what years did their other films come out?",
        "Take the director of {e} and give me the years of their other films.",
        "How active was the director of {e} otherwise? Release years of their other films, please.",
        "I need years: other films from the same director as {e}.",
        "director of {e} other releases year",
        "director of {e} - other movies, in what year came out",
    ]),
    ("directed_by -> directed_by_inv -> starred_actors", [
        "Does the director of {e} have favourite actors? Tell me who acts in their other films.",
        "Which actors would I meet if I watched the rest of {e}'s director's films?",
        "We loved {e}; who's in the other films that same director made?",
        "Quiz prep - the person who directed {e} made other movies; which actors starred in them?",
        "actors in other films of {e} director",
        "{e} director other movies who is acting",
    ]),
    ("directed_by -> directed_by_inv -> written_by", [
        "I'm interested in who writes for the director of {e}: who wrote their other films?",
        "Scripts for the other films of {e}'s director - whose were they?",
        "Looking at the director of {e}'s other films - who's credited with writing them?",
        "Need the writers behind that director's other movies - the director of {e}.",
        "writers other films {e} director",
        "who is writer for other movies of the {e} director",
    ]),
    ("starred_actors -> starred_actors_inv -> directed_by", [
        "The cast of {e} went on to other jobs - who were the directors on those films?",
        "Which directors should I check out if I follow {e}'s actors into their other movies?",
        "Tell me who directed the other movies of the people acting in {e}.",
        "Directors who've worked with {e}'s actors elsewhere?",
        "directors of films with {e} actors",
        "actors of {e} in other movies, who director",
    ]),
    ("starred_actors -> starred_actors_inv -> has_genre", [
        "Everyone in {e} has other films; which genres are those?",
        "I like the cast of {e} but not every genre - what genres are their other movies?",
        "Tell me the genres of other films with {e}'s actors in them.",
        "What genres do the people acting in {e} usually do in their other films?",
        "{e} actors other movies genre",
        "what genre is other films of actors from {e}",
    ]),
    ("starred_actors -> starred_actors_inv -> in_language", [
        "I'm learning languages and like the actors from {e}. What languages are their other films in?",
        "Tell me the languages of any other movie featuring an actor from {e}.",
        "The people in {e} - do their other movies use English or other languages? list them",
        "Check the other films of everyone who acted in {e} and give me their languages.",
        "{e} cast other films languages",
        "actors of {e} play in movies of which language",
    ]),
    ("starred_actors -> starred_actors_inv -> release_year", [
        "I want the years the rest of {e}'s cast had films released.",
        "In which years did movies featuring one of {e}'s actors come out, not counting that one?",
        "Put the other films of {e}'s actors on a calendar - which years are filled?",
        "Release years for the other films that have an actor from {e} in them.",
        "{e} cast, other movies, years",
        "actors from {e}, what years other films of them",
    ]),
    ("starred_actors -> starred_actors_inv -> written_by", [
        "I'm following the cast of {e} around - who wrote the other films they're in?",
        "Give me the writing credits on films that share an actor with {e}.",
        "The actors from {e} did other movies too - whose scripts were those?",
        "Writers, please, for whatever else {e}'s actors have been in.",
        "writers of other films of {e} actors",
        "the actors of {e}, their other movies written from who",
    ]),
    ("written_by -> written_by_inv -> directed_by", [
        "{e}'s writer sold other scripts too - which directors ended up making them?",
        "I love the writer of {e} - which directors made their other screenplays into movies?",
        "Directors who worked with the writer of {e} on other films?",
        "Once {e}'s writer had another script made, who directed it? all such directors",
        "directors for more films by {e}'s screenwriter",
        "{e} writer, other scripts, director who",
    ]),
    ("written_by -> written_by_inv -> has_genre", [
        "Genre check on the rest of the films written by {e}'s writer.",
        "If the writer of {e} had other scripts filmed, which genres did those turn out to be?",
        "Tell me about the writer behind {e}: the genres of their other films.",
        "Other films from {e}'s writer: comedies? dramas? Give the genres.",
        "genres screenwriter of {e} other work",
        "the {e} writer wrote other films, genres?",
    ]),
    ("written_by -> written_by_inv -> in_language", [
        "Whoever wrote {e} wrote other films too; tell me the languages of those.",
        "Check the other movies by {e}'s writer and tell me their languages.",
        "Languages, please, of whatever else the writer of {e} wrote.",
        "Would I need subtitles for the other films by {e}'s screenwriter? which languages",
        "other films same writer as {e} language",
        "{e} writer make more movie, what language it is",
    ]),
    ("written_by -> written_by_inv -> release_year", [
        "Was {e}'s writer around for long? Tell me what years their other movies came out.",
        "When did the writer of {e} get other films released? years",
        "What years did other films by {e}'s screenwriter hit theaters?",
        "I'm dating the career of whoever wrote {e}: years their other films came out?",
        "years other movies by writer of {e}",
        "writer of {e} - other film years when released",
    ]),
    ("written_by -> written_by_inv -> starred_actors", [
        "Which actors keep turning up in the other films by {e}'s writer?",
        "Which actors have worked from the other scripts of {e}'s writer?",
        "I liked {e}'s screenplay. Who acted in the writer's other movies?",
        "Give me the casts of the writer of {e}'s other films.",
        "cast of other movies {e} writer wrote",
        "actors in other movie from writer of {e}",
    ]),
]


def main():
    run(PHRASES_F, "freeform_f.py", __doc__)

if __name__ == "__main__":
    main()
