// nginx-sizing: RS256 JSON Web Token check before proxying (njs, WebCrypto).
//
// Every request must carry "Authorization: Bearer <header>.<payload>.<signature>" whose header
// says alg RS256, whose payload has a numeric exp in the future (and nbf, when present, in the
// past), and whose RSASSA-PKCS1-v1_5 SHA-256 signature verifies with the public key in
// $jwt_public_key (base64 DER SubjectPublicKeyInfo). A token that passes is handed to the
// named location @jwt_backend; anything else gets 401 with a WWW-Authenticate header, as
// NGINX Plus auth_jwt answers.

const TOKEN = /^Bearer ([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/;

function refuse(r) {
    r.headersOut['WWW-Authenticate'] = 'Bearer realm="nginx-sizing"';
    r.return(401);
}

function decode(part) {
    return JSON.parse(Buffer.from(part, 'base64url').toString());
}

async function verify(r) {
    const m = TOKEN.exec(r.headersIn.Authorization || '');
    if (!m) {
        return refuse(r);
    }
    let header;
    let claims;
    try {
        header = decode(m[1]);
        claims = decode(m[2]);
    } catch (e) {
        return refuse(r);
    }
    const now = Date.now() / 1000;
    if (header.alg !== 'RS256' || typeof claims.exp !== 'number' || claims.exp <= now) {
        return refuse(r);
    }
    if (claims.nbf !== undefined && !(typeof claims.nbf === 'number' && claims.nbf <= now)) {
        return refuse(r);
    }
    let ok = false;
    try {
        const alg = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
        const spki = Buffer.from(r.variables.jwt_public_key, 'base64');
        const key = await crypto.subtle.importKey('spki', spki, alg, false, ['verify']);
        ok = await crypto.subtle.verify(alg, key, Buffer.from(m[3], 'base64url'),
                                        Buffer.from(m[1] + '.' + m[2]));
    } catch (e) {
        ok = false;
    }
    if (!ok) {
        return refuse(r);
    }
    r.internalRedirect('@jwt_backend');
}

export default { verify };
